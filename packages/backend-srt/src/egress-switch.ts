import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import {
  BackendUnavailableError,
  type Logger,
  type SandboxEvent,
  SandboxFailureError,
} from '@mcpsandbox/core';
import {
  DenialReporter,
  EgressProxy,
  type NetGrant,
  SecretReporter,
  type SecretRouting,
} from '@mcpsandbox/egress';

/** Who the proxy serves now: one session's grants, its trace and its hints. */
export interface EgressPolicy {
  readonly grants: readonly NetGrant[];
  readonly onEvent?: (event: SandboxEvent) => void;
  readonly logger: Logger;
  /** `--secret` (the server's processes only): bound hosts' connections are substituted. */
  readonly secrets?: SecretRouting;
}

/**
 * The one host listener srt's proxy settings point at (srt has one proxy per process and gives
 * an external proxy no way to tell commands apart). Each connection is served by the host-side
 * egress proxy of the session that holds the switch, with that session's grants, address checks
 * and denial hints; with no holder it is cut. One session holds it at a time.
 */
export class EgressSwitch {
  readonly #listeners: readonly Server[];
  #current: { readonly proxy: EgressProxy; readonly inbox: Server; readonly owner: symbol } | undefined;

  private constructor(listeners: readonly Server[]) {
    this.#listeners = listeners;
    for (const listener of listeners) {
      listener.on('connection', (socket: Socket) => {
        socket.on('error', () => socket.destroy());
        if (this.#current) this.#current.inbox.emit('connection', socket);
        else socket.destroy();
      });
      listener.on('error', () => {});
    }
  }

  /**
   * Loopback only, on one port for both families: srt's bridge dials `localhost`, which may be
   * either (macOS resolves it to ::1 first). With `range` (Windows, where the WFP filter lets the
   * sandbox user reach only those loopback ports), the first free port in it.
   */
  static async open(range?: readonly [number, number]): Promise<EgressSwitch> {
    const listen = (host: string, port: number) =>
      new Promise<Server>((resolve, reject) => {
        const listener = createServer();
        listener.once('error', reject);
        listener.listen(port, host, () => {
          listener.unref();
          resolve(listener);
        });
      });
    const v4 = range ? await listenInRange(listen, range) : await listen('127.0.0.1', 0);
    const port = (v4.address() as AddressInfo).port;
    const v6 = await listen('::1', port).catch(() => undefined);
    return new EgressSwitch(v6 ? [v4, v6] : [v4]);
  }

  /** Stops listening (a start that failed after opening the switch). */
  close(): void {
    this.#current?.proxy.close();
    this.#current = undefined;
    for (const listener of this.#listeners) listener.close();
  }

  get port(): number {
    const address = this.#listeners[0]?.address();
    if (!address || typeof address === 'string') throw new Error('egress listener has no port');
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
    const secretReporter = policy.secrets
      ? new SecretReporter((line) => policy.logger.warn(line))
      : undefined;
    const onEvent = (event: SandboxEvent) => {
      policy.onEvent?.(event);
      reporter.observe(event);
      secretReporter?.observe(event);
    };
    const proxy = new EgressProxy({
      grants: policy.grants,
      onEvent,
      ...(policy.secrets ? { secrets: policy.secrets } : {}),
    });
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

async function listenInRange(
  listen: (host: string, port: number) => Promise<Server>,
  [low, high]: readonly [number, number],
): Promise<Server> {
  for (let port = low; port <= high; port++) {
    try {
      return await listen('127.0.0.1', port);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    }
  }
  throw new BackendUnavailableError(
    `the srt backend cannot start: every loopback port from ${low} to ${high} (the ports srt-win's filter lets the sandbox reach) is in use`,
    { code: 'E_SRT_DEPENDENCIES' },
  );
}
