import { type AddressInfo, createServer, type Server } from 'node:net';
import type { Logger, SandboxEvent } from '@mcpsandbox/core';
import {
  DenialReporter,
  type Dialer,
  EgressProxy,
  type NetGrant,
  type Resolver,
  SecretReporter,
  type SecretRouting,
} from '@mcpsandbox/egress';

/**
 * One session's egress proxy on loopback (127.0.0.1 and ::1 on one port: the profile's
 * `localhost:PORT` is either). The only network the profile allows; the proxy applies the
 * session's grants, address checks and denial hints. One per session: `serve` runs many at once.
 */
export class SessionEgress {
  readonly #listeners: readonly Server[];
  readonly #proxy: EgressProxy;

  private constructor(listeners: readonly Server[], proxy: EgressProxy) {
    this.#listeners = listeners;
    this.#proxy = proxy;
    for (const listener of listeners) proxy.attach(listener);
  }

  static async open(
    grants: readonly NetGrant[],
    logger: Logger,
    onEvent?: (event: SandboxEvent) => void,
    /** `--secret` (the server's proxy only): bound hosts' connections are substituted. */
    secrets?: SecretRouting,
    /** Tests: the proxy's resolver and upstream dialer. */
    hooks: { readonly resolve?: Resolver; readonly dial?: Dialer } = {},
  ): Promise<SessionEgress> {
    const reporter = new DenialReporter(onEvent, logger);
    const secretReporter = secrets ? new SecretReporter((line) => logger.warn(line)) : undefined;
    const proxy = new EgressProxy({
      grants,
      onEvent: (event) => {
        onEvent?.(event);
        reporter.observe(event);
        secretReporter?.observe(event);
      },
      ...(secrets ? { secrets } : {}),
      ...(hooks.resolve ? { resolve: hooks.resolve } : {}),
      ...(hooks.dial ? { dial: hooks.dial } : {}),
    });
    const v4 = await listen('127.0.0.1', 0);
    const port = (v4.address() as AddressInfo).port;
    const v6 = await listen('::1', port).catch(() => undefined);
    return new SessionEgress(v6 ? [v4, v6] : [v4], proxy);
  }

  get port(): number {
    const address = this.#listeners[0]?.address();
    if (!address || typeof address === 'string') throw new Error('egress listener has no port');
    return address.port;
  }

  close(): void {
    this.#proxy.close();
    for (const listener of this.#listeners) listener.close();
  }
}

function listen(host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const listener = createServer();
    listener.once('error', reject);
    listener.listen(port, host, () => {
      listener.unref();
      resolve(listener);
    });
  });
}
