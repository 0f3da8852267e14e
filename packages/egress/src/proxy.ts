import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { connect, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type BoundSecret, type Host, hostText, type SandboxEvent } from '@mcpsandbox/core';
import { CONNECT_TIMEOUT, failureCode, INVALID_HOST } from './egress.js';
import {
  type Decision,
  decide,
  type NetGrant,
  type Resolver,
  sharedLookups,
  systemResolver,
} from './grants.js';
import { forwardRequestHeaders, parseAuthority, parseProxyUrl, upstreamReply } from './proxy-http.js';
import type { SessionCa } from './secrets/ca.js';
import { StandInWatch } from './secrets/watch.js';

export { type Decision, decide, type Resolver } from './grants.js';

export interface EgressProxyOptions {
  readonly grants: readonly NetGrant[];
  readonly onEvent?: (event: SandboxEvent) => void;
  readonly resolve?: Resolver;
  /** Opens the tunnel's upstream connection to the checked address (tests). */
  readonly dial?: (address: string, port: number) => Socket;
  /** `--secret`: connections to bound hosts end here in TLS, and the stand-ins are substituted. */
  readonly secrets?: SecretRouting;
}

export interface SecretRouting {
  readonly bound: readonly BoundSecret[];
  readonly ca: SessionCa;
  /** Trust for bound hosts' certificates (tests); else this host's default trust. */
  readonly upstreamCa?: string | readonly string[];
}

/**
 * The host-side HTTP proxy a sandbox reaches for its granted egress: CONNECT tunnels (HTTPS and
 * anything else over TCP) and absolute-URI plain HTTP. It serves connections accepted on a
 * listener that lives in the sandbox's own network namespace.
 *
 * Both sides are the attacker's: the sandbox writes the requests, and a granted upstream may be
 * one it controls. Every callback here is guarded: a fault ends that one exchange (502, or the
 * connection cut) and is reported, never thrown into the host process.
 */
export class EgressProxy {
  readonly #options: EgressProxyOptions;
  readonly #http: Server;
  readonly #sockets = new Set<Duplex>();
  readonly #listeners = new Set<NetServer>();
  readonly #watch: StandInWatch | undefined;
  readonly #resolve: Resolver;

  constructor(options: EgressProxyOptions) {
    this.#options = options;
    this.#resolve = sharedLookups(options.resolve ?? systemResolver);
    this.#watch = options.secrets
      ? new StandInWatch(options.secrets.bound, (event) => this.#event(event))
      : undefined;
    this.#http = createServer();
    this.#http.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      this.#tunnel(req, socket, head).catch((error: unknown) => {
        this.#fault('CONNECT', error);
        socket.destroy();
      });
    });
    this.#http.on('request', (req: IncomingMessage, res: ServerResponse) => {
      req.on('error', () => res.destroy());
      res.on('error', () => res.destroy());
      this.#forward(req, res).catch((error: unknown) => {
        this.#fault(req.method ?? 'GET', error);
        failReply(res, 502, 'mcp-sandbox: the proxy failed on this request');
      });
    });
    this.#http.on('clientError', (_error, socket) => {
      socket.destroy();
    });
    this.#http.on('error', (error) => this.#fault('listen', error));
  }

  /** Serves every connection `listener` accepts. */
  attach(listener: NetServer): void {
    this.#listeners.add(listener);
    // Accept can fail (EMFILE when the sandbox opens connections without end): that refuses one
    // connection, it does not end the host process.
    listener.on('error', (error) => this.#fault('accept', error));
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

  #event(event: SandboxEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // A failing observer must not take the proxy (or the host) down with it.
    }
  }

  #report(method: string, host: Host, port: number, decision: Decision): void {
    this.#event({
      type: 'proxy',
      decision: decision.allow ? 'allow' : 'deny',
      method,
      host: host.value,
      port,
      ...(decision.allow ? { address: decision.address } : { reason: decision.reason }),
    });
  }

  /** A connection to the checked address of a granted host that did not get through. */
  #failed(host: Host, port: number, reason: string): void {
    this.#event({ type: 'egress-failed', host: host.value, port, via: 'proxy', reason });
  }

  #badUpstream(method: string, host: Host, port: number, reason: string): void {
    this.#event({ type: 'proxy', decision: 'bad-upstream', method, host: host.value, port, reason });
  }

  /** A target whose host is not a plain name or IP: refused, recorded without its bytes. */
  #refusedTarget(method: string, reason: string): void {
    if (reason === INVALID_HOST) this.#event({ type: 'proxy', decision: 'deny', method, reason });
  }

  #fault(method: string, error: unknown): void {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    this.#event({
      type: 'proxy',
      decision: 'fault',
      method,
      reason: typeof code === 'string' ? code : 'error',
    });
  }

  async #tunnel(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    this.#watch?.check(String(req.url), 'connect-target');
    const authority = parseAuthority(req.url);
    if (!authority.ok) {
      this.#refusedTarget('CONNECT', authority.reason);
      refuse(socket, 400, `mcp-sandbox: ${authority.reason}`);
      return;
    }
    const { host, port } = authority.value;
    const shown = `${hostText(host)}:${port}`;
    const decision = await decide(this.#options.grants, host, port, this.#resolve);
    this.#report('CONNECT', host, port, decision);
    if (!decision.allow) {
      refuse(socket, 403, `mcp-sandbox: egress to ${shown} refused: ${decision.reason}`);
      return;
    }
    if (socket.destroyed) return;
    const secrets = this.#options.secrets;
    const bound =
      host.kind === 'name' ? secrets?.bound.filter((secret) => secret.hosts.includes(host.value)) : [];
    if (secrets && host.kind === 'name' && bound && bound.length > 0) {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      // Loaded only by a session that binds a secret: the others never read this code.
      const { intercept } = await import('./secrets/intercept.js');
      await intercept(socket, head, {
        host: host.value,
        port,
        address: decision.address,
        secrets: bound,
        ca: secrets.ca,
        ...(secrets.upstreamCa ? { upstreamCa: secrets.upstreamCa } : {}),
        ...(this.#options.dial ? { dial: this.#options.dial } : {}),
        onEvent: (event) => this.#event(event),
      });
      return;
    }
    const upstream = this.#options.dial
      ? this.#options.dial(decision.address, port)
      : connect({ host: decision.address, port });
    this.#track(upstream);
    upstream.setTimeout(30_000, () => {
      this.#failed(host, port, CONNECT_TIMEOUT);
      refuse(socket, 502, `mcp-sandbox: cannot connect to ${shown}`);
      upstream.destroy();
    });
    // Node clears `connecting` before a failed connect's error: whether it connected is kept here.
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      upstream.setTimeout(0);
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', (error) => {
      if (!connected) {
        this.#failed(host, port, failureCode(error));
        refuse(socket, 502, `mcp-sandbox: cannot connect to ${shown}`);
      } else socket.destroy();
    });
    upstream.on('close', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const target = parseProxyUrl(req.url);
    if (!target.ok) {
      this.#refusedTarget(method, target.reason);
      failReply(res, 400, `mcp-sandbox: ${target.reason}`);
      return;
    }
    const { host, port, path } = target.value;
    // A stand-in in plain HTTP is never replaced (the wire is readable by anyone on the way).
    this.#watch?.check(`${String(req.url)}\n${req.rawHeaders.join('\n')}`, 'plain-http');
    const shown = `${hostText(host)}:${port}`;
    const decision = await decide(this.#options.grants, host, port, this.#resolve);
    this.#report(method, host, port, decision);
    if (!decision.allow) {
      failReply(res, 403, `mcp-sandbox: egress to ${shown} refused: ${decision.reason}`);
      return;
    }
    const headers = forwardRequestHeaders(req.rawHeaders);
    if (!headers.ok) {
      failReply(res, 400, `mcp-sandbox: ${headers.reason}`);
      return;
    }
    if (res.destroyed) return;
    const upstream = request({
      host: decision.address,
      port,
      method,
      path,
      headers: headers.value as string[],
      ...(this.#options.dial ? { createConnection: () => this.#options.dial!(decision.address, port) } : {}),
      // The reply's headers are checked below, before anything of it reaches the sandbox.
      insecureHTTPParser: false,
    });
    upstream.on('response', (reply: IncomingMessage) => {
      reply.on('error', () => res.destroy());
      const checked = upstreamReply(reply.statusCode, reply.statusMessage, reply.rawHeaders);
      if (!checked.ok) {
        this.#badUpstream(method, host, port, checked.reason);
        reply.destroy();
        failReply(res, 502, `mcp-sandbox: bad reply from ${shown}: ${checked.reason}`);
        return;
      }
      try {
        // The standard reason phrase, never the upstream's text.
        res.writeHead(checked.value.status, checked.value.headers as string[]);
      } catch (error) {
        this.#badUpstream(method, host, port, 'reply headers refused by the HTTP writer');
        this.#fault(method, error);
        reply.destroy();
        failReply(res, 502, `mcp-sandbox: bad reply from ${shown}`);
        return;
      }
      reply.pipe(res);
    });
    // Upgrades are not proxied here (CONNECT is the way to tunnel).
    upstream.on('upgrade', (_reply: IncomingMessage, socket: Duplex) => {
      socket.destroy();
      this.#badUpstream(method, host, port, 'the upstream switched protocols');
      failReply(res, 502, `mcp-sandbox: bad reply from ${shown}`);
    });
    // Set before the upstream is cut for either reason: a client gone first is not its failure.
    let replied = false;
    let clientGone = false;
    upstream.once('response', () => {
      replied = true;
    });
    res.on('close', () => {
      clientGone = true;
      upstream.destroy();
    });
    upstream.setTimeout(30_000, () =>
      upstream.destroy(Object.assign(new Error('upstream timeout'), { code: CONNECT_TIMEOUT })),
    );
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      // Node's parser refused the reply (a bad status line, header or framing): a bad gateway.
      if (typeof error.code === 'string' && error.code.startsWith('HPE_')) {
        this.#badUpstream(method, host, port, `unparsable reply (${error.code})`);
      } else if (!replied && !clientGone) {
        // Before any reply (refused, reset, timed out): the host could not reach it.
        this.#failed(host, port, failureCode(error));
      }
      failReply(res, 502, `mcp-sandbox: cannot reach ${shown}`);
    });
    req.pipe(upstream);
  }
}

function refuse(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const reason = status === 403 ? 'Forbidden' : status === 502 ? 'Bad Gateway' : 'Bad Request';
  const body = `${message}\n`;
  try {
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  } catch {
    socket.destroy();
  }
}

/** Answers with a plain-text error, or cuts the connection when a reply has already begun. */
function failReply(res: ServerResponse, status: number, message: string): void {
  if (res.destroyed || res.writableEnded) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `${message}\n`;
  // Called from error handlers too: it must not throw whatever state the response is in.
  try {
    res.writeHead(status, {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
  } catch {
    res.destroy();
  }
}
