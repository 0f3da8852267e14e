import { lookup } from 'node:dns/promises';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { connect, isIP, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SandboxEvent } from '@mcpsandbox/core';
import { canonicalIp, matchGrant, type NetGrant, normalizeHost, privateAddressReason } from './grants.js';

export type Decision =
  | { readonly allow: true; readonly address: string; readonly grant: NetGrant }
  | { readonly allow: false; readonly reason: string };

export type Resolver = (host: string) => Promise<readonly string[]>;

const defaultResolver: Resolver = async (host) =>
  (await lookup(host, { all: true })).map((entry) => entry.address);

/**
 * Decides whether `host:port` may be reached under `grants`. A name is resolved here, on the
 * host, once: every address must be public (a granted name that points at loopback, a private
 * network or the metadata service is refused), and the caller connects to the address that was
 * checked, so a second lookup cannot swap it. An IP is reached only when granted as that IP, or
 * under `*` when it is public.
 */
export async function decide(
  grants: readonly NetGrant[],
  host: string,
  port: number,
  resolve: Resolver = defaultResolver,
): Promise<Decision> {
  const target = normalizeHost(host);
  const grant = matchGrant(grants, target, port);
  if (!grant) return { allow: false, reason: 'not granted' };
  if (isIP(target)) {
    if (grant.kind === 'ip') return { allow: true, address: canonicalIp(target), grant };
    const why = privateAddressReason(target);
    if (why) return { allow: false, reason: `${why} address; grant it as an explicit IP` };
    return { allow: true, address: target, grant };
  }
  let addresses: readonly string[];
  try {
    addresses = await resolve(target);
  } catch (error) {
    return {
      allow: false,
      reason: `cannot resolve: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    };
  }
  if (addresses.length === 0) return { allow: false, reason: 'cannot resolve: no address' };
  for (const address of addresses) {
    const why = privateAddressReason(address);
    if (why) return { allow: false, reason: `resolves to ${address} (${why}); grant it as an explicit IP` };
  }
  return { allow: true, address: addresses[0]!, grant };
}

export interface EgressProxyOptions {
  readonly grants: readonly NetGrant[];
  readonly onEvent?: (event: SandboxEvent) => void;
  readonly resolve?: Resolver;
  /** Opens the tunnel's upstream connection to the checked address (tests). */
  readonly dial?: (address: string, port: number) => Socket;
}

/**
 * The host-side HTTP proxy a sandbox reaches for its granted egress: CONNECT tunnels (HTTPS and
 * anything else over TCP) and absolute-URI plain HTTP. It serves connections accepted on a
 * listener that lives in the sandbox's own network namespace.
 */
export class EgressProxy {
  readonly #options: EgressProxyOptions;
  readonly #http: Server;
  readonly #sockets = new Set<Duplex>();
  readonly #listeners = new Set<NetServer>();

  constructor(options: EgressProxyOptions) {
    this.#options = options;
    this.#http = createServer();
    this.#http.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.#tunnel(req, socket, head);
    });
    this.#http.on('request', (req: IncomingMessage, res: ServerResponse) => {
      void this.#forward(req, res);
    });
    this.#http.on('clientError', (_error, socket) => {
      socket.destroy();
    });
  }

  /** Serves every connection `listener` accepts. */
  attach(listener: NetServer): void {
    this.#listeners.add(listener);
    listener.on('connection', (socket: Socket) => {
      this.#track(socket);
      this.#http.emit('connection', socket);
    });
  }

  /** Stops accepting and cuts every open tunnel. */
  close(): void {
    for (const listener of this.#listeners) listener.close();
    this.#listeners.clear();
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  #track(socket: Duplex): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }

  #report(method: string, host: string, port: number, decision: Decision): void {
    this.#options.onEvent?.({
      type: 'proxy',
      decision: decision.allow ? 'allow' : 'deny',
      method,
      host,
      port,
      ...(decision.allow ? { address: decision.address } : { reason: decision.reason }),
    });
  }

  async #tunnel(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const authority = parseAuthority(req.url ?? '');
    if (!authority) {
      refuse(socket, 400, 'bad CONNECT target');
      return;
    }
    const decision = await decide(
      this.#options.grants,
      authority.host,
      authority.port,
      this.#options.resolve,
    );
    this.#report('CONNECT', authority.host, authority.port, decision);
    if (!decision.allow) {
      refuse(
        socket,
        403,
        `mcp-sandbox: egress to ${authority.host}:${authority.port} refused: ${decision.reason}`,
      );
      return;
    }
    const upstream = this.#options.dial
      ? this.#options.dial(decision.address, authority.port)
      : connect({ host: decision.address, port: authority.port });
    this.#track(upstream);
    upstream.setTimeout(30_000, () => upstream.destroy());
    upstream.once('connect', () => {
      upstream.setTimeout(0);
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => {
      if (upstream.connecting) refuse(socket, 502, `mcp-sandbox: cannot connect to ${authority.host}`);
      else socket.destroy();
    });
    upstream.on('close', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      sendText(res, 400, 'mcp-sandbox: the proxy takes absolute http:// URLs or CONNECT');
      return;
    }
    if (url.protocol !== 'http:') {
      sendText(res, 400, 'mcp-sandbox: only http:// URLs are forwarded; use CONNECT for https');
      return;
    }
    const host = url.hostname;
    const port = url.port ? Number(url.port) : 80;
    const decision = await decide(this.#options.grants, host, port, this.#options.resolve);
    this.#report(req.method ?? 'GET', normalizeHost(host), port, decision);
    if (!decision.allow) {
      sendText(res, 403, `mcp-sandbox: egress to ${normalizeHost(host)}:${port} refused: ${decision.reason}`);
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      headers[name] = value;
    }
    const upstream = request(
      { host: decision.address, port, method: req.method, path: `${url.pathname}${url.search}`, headers },
      (reply) => {
        const replyHeaders: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(reply.headers)) {
          if (value === undefined || HOP_BY_HOP.has(name)) continue;
          replyHeaders[name] = value;
        }
        res.writeHead(reply.statusCode ?? 502, reply.statusMessage, replyHeaders);
        reply.pipe(res);
      },
    );
    upstream.setTimeout(30_000, () => upstream.destroy(new Error('upstream timeout')));
    upstream.on('error', () => {
      if (!res.headersSent) sendText(res, 502, `mcp-sandbox: cannot reach ${normalizeHost(host)}`);
      else res.destroy();
    });
    req.pipe(upstream);
  }
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function parseAuthority(text: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: normalizeHost(match[1]!), port };
}

function refuse(socket: Duplex, status: number, message: string): void {
  const reason = status === 403 ? 'Forbidden' : status === 502 ? 'Bad Gateway' : 'Bad Request';
  const body = `${message}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

function sendText(res: ServerResponse, status: number, message: string): void {
  const body = `${message}\n`;
  res.writeHead(status, {
    'content-type': 'text/plain',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}
