import { createServer, type Server, type Socket } from 'node:net';
import { type Logger, SandboxFailureError, type SandboxEvent } from '@mcpsandbox/core';
import { DenialReporter, EgressProxy, type NetGrant } from '@mcpsandbox/backend-local';

/** Who the proxy serves now: one session's grants, its trace and its hints. */
export interface EgressPolicy {
  readonly grants: readonly NetGrant[];
  readonly onEvent?: (event: SandboxEvent) => void;
  readonly logger: Logger;
}

/**
 * The one host listener srt's proxy settings point at (srt has one proxy per process and gives
 * an external proxy no way to tell commands apart). Each connection is served by the host-side
 * egress proxy of the session that holds the switch, with that session's grants, address checks
 * and denial hints; with no holder it is cut. One session holds it at a time.
 */
export class EgressSwitch {
  readonly #listener: Server;
  #current: { readonly proxy: EgressProxy; readonly inbox: Server; readonly owner: symbol } | undefined;

  private constructor(listener: Server) {
    this.#listener = listener;
    listener.on('connection', (socket: Socket) => {
      socket.on('error', () => socket.destroy());
      if (this.#current) this.#current.inbox.emit('connection', socket);
      else socket.destroy();
    });
    listener.on('error', () => {});
  }

  static async open(): Promise<EgressSwitch> {
    const listener = createServer();
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(0, '127.0.0.1', () => resolve());
    });
    listener.unref();
    return new EgressSwitch(listener);
  }

  get port(): number {
    const address = this.#listener.address();
    if (address === null || typeof address === 'string') throw new Error('egress listener has no port');
    return address.port;
  }

  /** Serves `owner`'s policy from now on. Another owner still holding the switch is refused. */
  hold(owner: symbol, policy: EgressPolicy): void {
    if (this.#current && this.#current.owner !== owner) {
      throw new SandboxFailureError(
        'the srt backend runs one session at a time in one mcp-sandbox process (srt has one proxy ' +
          'per process): close the other session first, run each in its own process, or use --backend local',
        { code: 'E_SRT_BUSY' },
      );
    }
    this.#current?.proxy.close();
    const reporter = new DenialReporter(policy.onEvent, policy.logger);
    const onEvent = (event: SandboxEvent) => {
      policy.onEvent?.(event);
      reporter.observe(event);
    };
    const proxy = new EgressProxy({ grants: policy.grants, onEvent });
    // A listener that never listens: it only hands this policy's proxy the switch's connections.
    const inbox = createServer();
    proxy.attach(inbox);
    this.#current = { proxy, inbox, owner };
  }

  release(owner: symbol): void {
    if (this.#current?.owner !== owner) return;
    this.#current.proxy.close();
    this.#current = undefined;
  }
}
