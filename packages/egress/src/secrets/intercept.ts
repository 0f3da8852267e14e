/**
 * The TLS a bound host's CONNECT ends in: the proxy answers with a leaf of the session CA, reads
 * each request strictly, one at a time, puts the real value where a credential travels, and sends
 * it on over its own TLS to the real host, verified against this host's trust. The reply comes
 * back re-framed by the proxy and searched for the real value in every form it could be echoed in.
 * HTTP/1.1 only (ALPN offers nothing else): a client that wants h2 falls back to it.
 */
import { request as httpRequest, type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureContext, TLSSocket, connect as tlsConnect } from 'node:tls';
import type { BoundSecret, HostName, SandboxEvent } from '@mcpsandbox/core';
import { upstreamReply } from '../proxy-http.js';
import type { SessionCa } from './ca.js';
import { type RequestHead, readRequest } from './http1.js';
import { revealingForms, substitute } from './substitute.js';
import { StandInWatch } from './watch.js';

export interface InterceptOptions {
  readonly host: HostName;
  readonly port: number;
  /** The address the proxy checked for `host`. */
  readonly address: string;
  readonly secrets: readonly BoundSecret[];
  readonly ca: SessionCa;
  /** Trust for the upstream's certificate (tests); else this host's default trust. */
  readonly upstreamCa?: string | readonly string[];
  readonly dial?: (address: string, port: number) => Socket;
  readonly onEvent: (event: SandboxEvent) => void;
}

const IDLE_MS = 120_000;

/**
 * The trust the proxy verifies upstreams with, built once per trust (loading the root store is
 * the costliest part of a first TLS connection): the host's default, or the tests' CA.
 */
const upstreamContexts = new Map<string | readonly string[] | undefined, SecureContext>();

/** The upstream trust for `ca`, made now if it is not yet (a session prepares it at start). */
export function upstreamContext(ca?: string | readonly string[]): SecureContext {
  let context = upstreamContexts.get(ca);
  if (context === undefined) {
    context = createSecureContext(ca ? { ca: ca as string[] } : {});
    // One trust in use, in practice; a process that is handed many (tests) keeps a few.
    if (upstreamContexts.size >= 8) upstreamContexts.clear();
    upstreamContexts.set(ca, context);
  }
  return context;
}
/** Request headers the proxy sets itself or drops (hop-by-hop, framing, encodings it could not search). */
const DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'content-length',
  'upgrade',
  'expect',
  'accept-encoding',
]);

/** Ends the sandbox's TLS with a leaf for `host` and serves its requests until either side closes. */
export async function intercept(socket: Duplex, head: Buffer, o: InterceptOptions): Promise<void> {
  const leaf = await o.ca.leaf(o.host);
  if (head.length > 0) socket.unshift(head);
  // Small writes (a reply's head, then its chunks) must not wait for the peer's delayed ACK.
  (socket as Partial<Socket>).setNoDelay?.(true);
  const tls = new TLSSocket(socket as Socket, {
    isServer: true,
    secureContext: leaf.context,
    ALPNProtocols: ['http/1.1'],
  });
  let secured = false;
  tls.once('secure', () => {
    secured = true;
  });
  // Not TLS, a pinned certificate or a client certificate the session CA cannot answer: the
  // connection fails here, never with the real value, and the user is told which flag fits.
  const unsecured = () => {
    if (secured) return;
    secured = true;
    o.onEvent({ type: 'secret-tls-failed', host: o.host, port: o.port });
  };
  tls.on('error', () => {
    unsecured();
    tls.destroy();
  });
  tls.once('close', unsecured);
  socket.on('close', () => tls.destroy());
  tls.setTimeout(IDLE_MS, () => tls.destroy());
  const reader = tls[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let buffered: Buffer = Buffer.alloc(0);
  try {
    for (;;) {
      const read = readRequest(buffered);
      if (read.kind === 'more') {
        const next = await reader.next();
        if (next.done) return;
        buffered = Buffer.concat([buffered, next.value]);
        continue;
      }
      if (read.kind === 'bad') {
        o.onEvent({ type: 'secret-request-refused', host: o.host, reason: read.reason });
        answer(tls, 400, `mcp-sandbox: request refused: ${read.reason}`);
        return;
      }
      buffered = buffered.subarray(read.used);
      const keepGoing = await exchange(tls, read.head, read.body, o);
      if (!keepGoing) return;
    }
  } finally {
    // What was written (a refusal, the last reply) is flushed before the socket goes.
    if (tls.writableEnded) tls.once('finish', () => tls.destroy());
    else tls.end(() => tls.destroy());
  }
}

/** One request and its reply; false when the connection must end. */
async function exchange(
  tls: TLSSocket,
  head: RequestHead,
  body: Buffer,
  o: InterceptOptions,
): Promise<boolean> {
  if (!sniFits(tls, o)) {
    o.onEvent({ type: 'secret-request-refused', host: o.host, reason: 'SNI is not the bound host' });
    answer(
      tls,
      400,
      'mcp-sandbox: request refused: the TLS server name must be the host this connection is for',
    );
    return false;
  }
  const hosts = head.headers.filter(([name]) => name.toLowerCase() === 'host');
  const wanted = [o.host, `${o.host}:${o.port}`];
  if (hosts.length !== 1 || !wanted.includes(hosts[0]![1].toLowerCase())) {
    o.onEvent({ type: 'secret-request-refused', host: o.host, reason: 'Host header is not the bound host' });
    answer(
      tls,
      400,
      'mcp-sandbox: request refused: the Host header must name the host this connection is for',
    );
    return false;
  }
  if (head.headers.some(([name]) => name.toLowerCase() === 'upgrade')) {
    answer(tls, 501, 'mcp-sandbox: protocol upgrades are not relayed for a host with a bound secret');
    return false;
  }
  const done = substitute(head, body, o.secrets);
  const path = head.target.split('?')[0] ?? '/';
  for (const misuse of done.misuse) {
    o.onEvent({ type: 'secret-misuse', name: misuse.name, host: o.host, where: misuse.where });
  }
  for (const name of done.used) {
    o.onEvent({ type: 'secret-substituted', name, host: o.host, method: head.method, path });
  }
  const headers: string[] = [];
  for (const [name, value] of done.headers) if (!DROPPED.has(name.toLowerCase())) headers.push(name, value);
  headers.push('Accept-Encoding', 'identity');
  if (done.body.length > 0 || !['GET', 'HEAD', 'DELETE', 'OPTIONS'].includes(head.method)) {
    headers.push('Content-Length', String(done.body.length));
  }
  return relay(tls, head.method, done.target, headers, done.body, o);
}

/**
 * The TLS server name, when the client sent one, is the bound host: a name that says another
 * host (or carries a stand-in, recorded as misuse) is two answers to "which host", refused.
 */
function sniFits(tls: TLSSocket, o: InterceptOptions): boolean {
  const sni = tls.servername;
  if (typeof sni !== 'string' || sni === '') return true;
  if (sni.toLowerCase() === o.host) return true;
  new StandInWatch(o.secrets, (event) => o.onEvent({ ...event, host: o.host })).check(sni, 'sni');
  return false;
}

function relay(
  tls: TLSSocket,
  method: string,
  target: string,
  headers: string[],
  body: Buffer,
  o: InterceptOptions,
): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const upstreamTls = tlsConnect({
      ...(o.dial
        ? { socket: o.dial(o.address, o.port).setNoDelay(true) }
        : { host: o.address, port: o.port, noDelay: true }),
      servername: o.host,
      ALPNProtocols: ['http/1.1'],
      secureContext: upstreamContext(o.upstreamCa),
    });
    const upstream = httpRequest({
      method,
      path: target,
      headers,
      createConnection: () => upstreamTls,
      insecureHTTPParser: false,
    });
    let settled = false;
    const finish = (keep: boolean) => {
      if (settled) return;
      settled = true;
      upstreamTls.destroy();
      resolve(keep);
    };
    upstream.setTimeout(30_000, () => upstream.destroy(new Error('upstream timeout')));
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      o.onEvent({
        type: 'egress-failed',
        host: o.host,
        port: o.port,
        via: 'secret',
        reason: errorCode(error),
      });
      answer(tls, 502, `mcp-sandbox: cannot reach ${o.host} (${errorCode(error)})`);
      finish(false);
    });
    upstream.on('response', (reply: IncomingMessage) => {
      replyToSandbox(tls, method, reply, o).then(finish, () => finish(false));
    });
    tls.once('close', () => {
      upstream.destroy();
      finish(false);
    });
    upstream.end(body);
  });
}

/** The upstream's reply, re-framed as chunked; cut off at the first sight of a real value. */
async function replyToSandbox(
  tls: TLSSocket,
  method: string,
  reply: IncomingMessage,
  o: InterceptOptions,
): Promise<boolean> {
  const checked = upstreamReply(reply.statusCode, reply.statusMessage, reply.rawHeaders);
  if (!checked.ok) {
    answer(tls, 502, `mcp-sandbox: bad reply from ${o.host}: ${checked.reason}`);
    return false;
  }
  const forms = o.secrets.flatMap((secret) =>
    revealingForms(secret.value).map((form) => ({ form, name: secret.name })),
  );
  const longest = Math.max(...forms.map((f) => f.form.length));
  const found = (text: string) => forms.find((f) => text.includes(f.form));
  const kept: string[] = [];
  let encoded = false;
  for (let i = 0; i < checked.value.headers.length; i += 2) {
    const name = checked.value.headers[i]!;
    const lower = name.toLowerCase();
    if (lower === 'content-encoding' && checked.value.headers[i + 1]!.toLowerCase() !== 'identity')
      encoded = true;
    if (lower === 'content-length' || lower === 'transfer-encoding') continue;
    kept.push(name, checked.value.headers[i + 1]!);
  }
  const cut = (why: string, name?: string) => {
    o.onEvent({ type: 'secret-reply-cut', host: o.host, reason: why, ...(name ? { name } : {}) });
    reply.destroy();
    tls.destroy();
    return false;
  };
  if (encoded) return cut('the reply is compressed and could not be searched for the secret');
  const headerHit = found(kept.join('\n'));
  if (headerHit) return cut('the reply carried the real value', headerHit.name);
  const status = checked.value.status;
  const bodiless = method === 'HEAD' || status === 204 || status === 304;
  let text = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Status'}\r\n`;
  for (let i = 0; i < kept.length; i += 2) text += `${kept[i]}: ${kept[i + 1]}\r\n`;
  text += bodiless ? 'Content-Length: 0\r\n\r\n' : 'Transfer-Encoding: chunked\r\n\r\n';
  if (bodiless) {
    tls.write(text, 'latin1');
    reply.resume();
    return true;
  }
  // The head goes out with the first chunk (a small reply is one TLS record, not three).
  let pending = text;
  const send = (data: string): boolean => {
    const out = pending + data;
    pending = '';
    return tls.write(out, 'latin1');
  };
  // A window as long as the longest form is held back, so that a value split across two reads is
  // seen whole before any of it is written.
  let held = '';
  for await (const chunk of reply as AsyncIterable<Buffer>) {
    const window = held + chunk.toString('latin1');
    const hit = found(window);
    if (hit) return cut('the reply carried the real value', hit.name);
    const safe = Math.max(0, window.length - (longest - 1));
    held = window.slice(safe);
    // A sandbox that reads slowly holds the upstream back: nothing piles up here.
    if (safe > 0 && !send(chunkOf(window.slice(0, safe)))) await drained(tls);
    if (tls.destroyed) return false;
  }
  send(`${held.length > 0 ? chunkOf(held) : ''}0\r\n\r\n`);
  return true;
}

/** One chunk of chunked encoding, as one string: its parts apart would be small segments each. */
function chunkOf(data: string): string {
  return `${Buffer.byteLength(data, 'latin1').toString(16)}\r\n${data}\r\n`;
}

function drained(tls: TLSSocket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      tls.off('drain', done);
      tls.off('close', done);
      resolve();
    };
    tls.on('drain', done);
    tls.on('close', done);
  });
}

function answer(tls: TLSSocket, status: number, message: string): void {
  if (tls.destroyed) return;
  const body = `${message}\n`;
  tls.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function errorCode(error: NodeJS.ErrnoException): string {
  return typeof error.code === 'string' && /^[A-Z][A-Z0-9_]{1,40}$/.test(error.code)
    ? error.code
    : 'ECONNFAILED';
}
