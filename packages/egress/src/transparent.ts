import { connect, type Server as NetServer, type Socket } from 'node:net';
import type { SandboxEvent } from '@mcpsandbox/core';
import { CONNECT_TIMEOUT, failureCode, type SyntheticNames } from './egress.js';
import type { NetGrant } from './grants.js';
import { decide, type Resolver, sharedLookups, systemResolver } from './grants.js';
import type { SecretRouting } from './proxy.js';

/** Opens the upstream connection to a checked address (tests point it at a local server). */
export type Dialer = (address: string, port: number) => Socket;

export const defaultDialer: Dialer = (address, port) => connect({ host: address, port, allowHalfOpen: true });

export interface TransparentEgressOptions {
  readonly grants: readonly NetGrant[];
  readonly names: SyntheticNames;
  readonly onEvent?: (event: SandboxEvent) => void;
  readonly resolve?: Resolver;
  readonly dial?: Dialer;
  /** `--secret`: a bound host's connections end in the session CA's TLS and are substituted. */
  readonly secrets?: SecretRouting;
}

/**
 * Serves connections caught on the sandbox's transparent listeners: the synthetic address a
 * program connected to names the host it looked up, and from there the decision and the
 * connection are the CONNECT path's (resolve on the host, check every address, connect to the
 * checked one). A refused connection is closed; the decision goes to the trace either way.
 */
export class TransparentEgress {
  readonly #options: TransparentEgressOptions;
  readonly #listeners = new Set<NetServer>();
  readonly #sockets = new Set<Socket>();
  readonly #resolve: Resolver;

  constructor(options: TransparentEgressOptions) {
    this.#options = options;
    this.#resolve = sharedLookups(options.resolve ?? systemResolver);
  }

  attach(listener: NetServer): void {
    this.#listeners.add(listener);
    listener.on('error', () => {});
    listener.on('connection', (socket: Socket) => void this.#serve(socket));
  }

  close(): void {
    for (const listener of this.#listeners) listener.close();
    this.#listeners.clear();
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  #track(socket: Socket): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }

  async #serve(socket: Socket): Promise<void> {
    this.#track(socket);
    socket.on('error', () => socket.destroy());
    socket.pause();
    // A client that half-closes (a line protocol's last request) still gets the whole reply.
    socket.allowHalfOpen = true;
    const port = socket.localPort;
    const name =
      socket.localAddress === undefined ? undefined : this.#options.names.nameOf(socket.localAddress);
    if (name === undefined || port === undefined) {
      // Not an address the responder handed out (127.0.0.1:443, say): nothing to map it to.
      socket.destroy();
      return;
    }
    const { grants, onEvent } = this.#options;
    // The table holds only names the DNS responder parsed: what is decided is what is resolved.
    const decision = await decide(grants, { kind: 'name', value: name }, port, this.#resolve);
    onEvent?.({
      type: 'proxy',
      decision: decision.allow ? 'allow' : 'deny',
      method: 'transparent',
      host: name,
      port,
      ...(decision.allow ? { address: decision.address } : { reason: decision.reason }),
    });
    if (!decision.allow || socket.destroyed) {
      socket.destroy();
      return;
    }
    const bound = this.#options.secrets?.bound.filter((secret) => secret.hosts.includes(name)) ?? [];
    if (this.#options.secrets && bound.length > 0) {
      socket.allowHalfOpen = false;
      // Loaded only by a session that binds a secret.
      const { intercept } = await import('./secrets/intercept.js');
      await intercept(socket, Buffer.alloc(0), {
        host: name,
        port,
        address: decision.address,
        secrets: bound,
        ca: this.#options.secrets.ca,
        ...(this.#options.secrets.upstreamCa ? { upstreamCa: this.#options.secrets.upstreamCa } : {}),
        ...(this.#options.dial ? { dial: this.#options.dial } : {}),
        ...(onEvent ? { onEvent } : { onEvent: () => {} }),
      });
      return;
    }
    const upstream = (this.#options.dial ?? defaultDialer)(decision.address, port);
    this.#track(upstream);
    const failed = (reason: string) =>
      onEvent?.({ type: 'egress-failed', host: name, port, via: 'transparent', reason });
    upstream.setTimeout(30_000, () => {
      failed(CONNECT_TIMEOUT);
      upstream.destroy();
    });
    // Node clears `connecting` before a failed connect's error: whether it connected is kept here.
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      upstream.setTimeout(0);
      upstream.pipe(socket);
      socket.pipe(upstream);
      socket.resume();
    });
    upstream.on('error', (error) => {
      if (!connected) failed(failureCode(error));
      upstream.destroy();
    });
    // An upstream that ended cleanly has ended the socket through the pipe: let it flush.
    upstream.on('close', () => {
      if (!socket.writableEnded) socket.destroy();
    });
    socket.on('close', () => upstream.destroy());
  }
}
