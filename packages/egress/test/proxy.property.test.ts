/**
 * Property tests of the egress proxy's parsing, with seeded generators (see property.ts): the
 * sandbox's requests and a granted upstream's replies are attacker bytes. The proxy never throws,
 * never forwards a malformed header and never copies an upstream's status text. Each run draws a
 * fresh base seed (or PROPERTY_SEED) and prints the seed of a failing case.
 */
import { once } from 'node:events';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  ServerResponse,
  STATUS_CODES,
  validateHeaderName,
  validateHeaderValue,
} from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { parseHost, type SandboxEvent } from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseGrant } from '../src/grants.js';
import { EgressProxy } from '../src/proxy.js';
import {
  forwardRequestHeaders,
  parseAuthority,
  parseProxyUrl,
  type RawHeaders,
  upstreamReply,
} from '../src/proxy-http.js';
import { BASE_SEED, forAll, type Gen, TOKEN_CHARS, VALUE_CHARS } from './property.js';

const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];
const COMMON = ['content-type', 'content-length', 'set-cookie', 'location', 'x-custom', 'host', 'accept'];

/** Every forwarded header is one Node's writer accepts and a peer parses back unchanged. */
function expectWellFormed(headers: RawHeaders, dropped: readonly string[] = HOP_BY_HOP): void {
  expect(headers.length % 2).toBe(0);
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string;
    expect(() => validateHeaderName(name)).not.toThrow();
    expect(() => validateHeaderValue(name, value)).not.toThrow();
    expect(value).toMatch(/^[\t\x20-\x7e\x80-\xff]*$/);
    expect(dropped).not.toContain(name.toLowerCase());
  }
}

function headerName(gen: Gen): string {
  if (gen.chance(0.25)) return gen.pick(HOP_BY_HOP);
  if (gen.chance(0.35)) return gen.pick(COMMON);
  return gen.text(TOKEN_CHARS, 12, gen.chance(0.5) ? 0 : 0.1);
}

function headerValue(gen: Gen): string {
  return gen.chance(0.3)
    ? gen.pick(['keep-alive', 'close', 'x-custom, te', '0', 'text/plain'])
    : gen.text(VALUE_CHARS, 20, gen.chance(0.5) ? 0 : 0.05);
}

function rawHeaders(gen: Gen): unknown {
  if (gen.chance(0.03)) return gen.pick([undefined, null, 'a: b', { a: 'b' }, ['odd']]);
  const out: unknown[] = [];
  const count = gen.int(0, 6);
  for (let i = 0; i < count; i++) out.push(headerName(gen), headerValue(gen));
  if (gen.chance(0.03)) out.push(gen.pick([1, null, undefined, ['x']]));
  return out;
}

function statusCode(gen: Gen): unknown {
  if (gen.chance(0.05)) return gen.pick([undefined, null, '200', 200.5, Number.NaN, -1, 0, 1e9]);
  return gen.chance(0.7)
    ? gen.pick([200, 201, 204, 301, 302, 304, 400, 404, 500, 502, 599])
    : gen.int(-10, 1100);
}

function statusText(gen: Gen): unknown {
  if (gen.chance(0.03)) return undefined;
  return gen.chance(0.6) ? gen.pick(['OK', 'Not Found', '', 'Whatever']) : gen.text(VALUE_CHARS, 16, 0.2);
}

describe('proxy parsing (pure), seeded', () => {
  it('upstreamReply: 20,000 replies; never throws, forwards only final codes and well-formed headers', async () => {
    await forAll(20_000, (gen) => {
      const code = statusCode(gen);
      const text = statusText(gen);
      const headers = rawHeaders(gen);
      const checked = upstreamReply(code, text, headers);
      if (!checked.ok) return;
      expect(Number.isInteger(checked.value.status)).toBe(true);
      expect(checked.value.status).toBeGreaterThanOrEqual(200);
      expect(checked.value.status).toBeLessThanOrEqual(599);
      expect(text).toMatch(/^[\t\x20-\x7e\x80-\xff]*$/);
      const connection = (headers as string[]).flatMap((h, i) =>
        i % 2 === 0 && h.toLowerCase() === 'connection'
          ? (headers as string[])[i + 1]!.split(',').map((t) => t.trim().toLowerCase())
          : [],
      );
      expectWellFormed(checked.value.headers, [...HOP_BY_HOP, ...connection]);
      // The writer the proxy hands them to accepts them as they are.
      const res = new ServerResponse({
        method: 'GET',
        httpVersionMajor: 1,
        httpVersionMinor: 1,
        headers: {},
      } as IncomingMessage);
      expect(() => res.writeHead(checked.value.status, checked.value.headers as string[])).not.toThrow();
    });
  });

  it('forwardRequestHeaders: 20,000 header lists; never throws, forwards only well-formed end-to-end headers', async () => {
    await forAll(20_000, (gen) => {
      const checked = forwardRequestHeaders(rawHeaders(gen));
      if (checked.ok) expectWellFormed(checked.value);
    });
  });

  it('parseProxyUrl: 20,000 targets; never throws, yields a host, a port in range and a visible-ASCII path', async () => {
    await forAll(20_000, (gen) => {
      const scheme = gen.pick(['http://', 'https://', 'HTTP://', 'ftp://', '', '//', 'http:']);
      const host = gen.pick([
        'example.com',
        '127.0.0.1',
        '[::1]',
        '[::ffff:127.0.0.1]',
        '0x7f.1',
        '2130706433',
        '',
        'user:pw@example.com',
        // Issue 20: hosts WHATWG keeps that are not names (shell code), and a NUL it refuses.
        'x;%7Btouch,m%7D;x',
        'a,b{c}.example',
        "a'b.example",
        '203.0.113.7%00.granted.test',
        gen.text('abcdefghijklmnopqrstuvwxyz0123456789.-;{},$`!', 20, 0.15),
      ]);
      const port = gen.pick([
        '',
        ':80',
        ':0',
        ':65535',
        ':65536',
        ':99999',
        ':-1',
        `:${gen.int(0, 70000)}`,
        ':',
      ]);
      const path = gen.text('abcdefghijklmnopqrstuvwxyz0123456789/-._~?=&', 20, 0.2);
      const target = gen.chance(0.02) ? gen.pick([undefined, null, 5]) : `${scheme}${host}${port}${path}`;
      const parsed = parseProxyUrl(target);
      if (!parsed.ok) return;
      // Only a validated host comes out, and it is what core's parser makes of its own text.
      expect(parsed.value.host.value).toMatch(/^[a-z0-9.:-]+$/);
      expect(parseHost(parsed.value.host.value)).toEqual(parsed.value.host);
      expect(Number.isInteger(parsed.value.port)).toBe(true);
      expect(parsed.value.port).toBeGreaterThanOrEqual(1);
      expect(parsed.value.port).toBeLessThanOrEqual(65535);
      expect(parsed.value.path).toMatch(/^\/[\x21-\x7e]*$/);
    });
  });

  it('parseAuthority: 20,000 CONNECT targets; never throws, yields a plain host and a port in range', async () => {
    await forAll(20_000, (gen) => {
      const host = gen.pick([
        'example.com',
        '[::1]',
        '[fe80::1%eth0]',
        '10.0.0.1',
        '',
        '203.0.113.7\0.granted.test',
        'x;{touch,m};x',
        gen.text(TOKEN_CHARS, 16, 0.2),
      ]);
      const port = gen.pick([
        '443',
        '0',
        '65536',
        '',
        `${gen.int(0, 99999)}`,
        gen.text('0123456789', 6, 0.2),
      ]);
      const target = gen.chance(0.02)
        ? gen.pick([undefined, null, 443])
        : `${host}${gen.chance(0.9) ? ':' : ''}${port}`;
      const parsed = parseAuthority(target);
      if (!parsed.ok) return;
      expect(parsed.value.host.value).toMatch(/^[a-z0-9.:-]+$/);
      expect(parseHost(parsed.value.host.value)).toEqual(parsed.value.host);
      expect(parsed.value.port).toBeGreaterThanOrEqual(1);
      expect(parsed.value.port).toBeLessThanOrEqual(65535);
    });
  });
});

// ── through real sockets ──────────────────────────────────────────────────────────────────────

let upstream: Server;
let upstreamPort: number;
let echo: ReturnType<typeof createHttpServer>;
let echoPort: number;
let listener: Server;
let proxyPort: number;
let proxy: EgressProxy;
const events: SandboxEvent[] = [];
/** What the raw upstream answers the next connection with. */
let nextReply: Buffer = Buffer.alloc(0);
/** The headers the echo upstream last received. */
let received: string[] = [];
const faults: unknown[] = [];
const onFault = (error: unknown) => faults.push(error);

beforeAll(async () => {
  process.on('uncaughtException', onFault);
  process.on('unhandledRejection', onFault);
  upstream = createServer((socket) => {
    const reply = nextReply;
    socket.on('error', () => undefined);
    socket.once('data', () => socket.end(reply));
  });
  echo = createHttpServer((req, res) => {
    received = req.rawHeaders;
    req.resume();
    req.on('end', () => res.end('echo'));
  });
  listener = createServer();
  await Promise.all(
    [upstream, echo, listener].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))),
  );
  upstreamPort = (upstream.address() as { port: number }).port;
  echoPort = (echo.address() as { port: number }).port;
  proxyPort = (listener.address() as { port: number }).port;
  proxy = new EgressProxy({ grants: [parseGrant('127.0.0.1')], onEvent: (event) => events.push(event) });
  proxy.attach(listener);
});

afterAll(() => {
  proxy.close();
  upstream.close();
  echo.close();
  process.off('uncaughtException', onFault);
  process.off('unhandledRejection', onFault);
});

/** Sends raw bytes to the proxy and collects its whole answer until it closes (or a timeout). */
async function exchange(request: Buffer): Promise<Buffer> {
  const socket: Socket = connect(proxyPort, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  // An incomplete request (a lone CR for a line end) waits for more: cut it, it proves nothing.
  socket.setTimeout(1_000, () => socket.destroy());
  await once(socket, 'connect');
  // Written, not ended: a half-closed client is one that went away. `Connection: close` in every
  // request makes the proxy close once it has answered.
  socket.write(request);
  await once(socket, 'close');
  return Buffer.concat(chunks);
}

/** The status line and header lines of an HTTP answer (latin-1), or undefined when there is none. */
function head(answer: Buffer): { status: number; reason: string; headers: string[] } | undefined {
  const text = answer.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const match = /^HTTP\/1\.1 (\d{3}) (.*)$/.exec(statusLine ?? '');
  if (!match) throw new Error(`not a status line: ${JSON.stringify(statusLine)}`);
  return { status: Number(match[1]), reason: match[2] as string, headers: lines };
}

function upstreamBytes(gen: Gen): Buffer {
  if (gen.chance(0.05)) return Buffer.from(gen.text(VALUE_CHARS, 40, 0.3), 'latin1');
  const version = gen.chance(0.7)
    ? 'HTTP/1.1'
    : gen.pick(['HTTP/1.0', 'HTTP/2', 'HTTP/9.9', 'ICY', 'http/1.1']);
  const code = gen.chance(0.8)
    ? String(gen.pick([200, 204, 301, 404, 500, 101, 100, 199, 600, 999]))
    : gen.text('0123456789', 4, 0.2);
  const lines = [`${version} ${code} ${String(statusText(gen) ?? '')}`];
  const count = gen.int(0, 4);
  for (let i = 0; i < count; i++) lines.push(`${headerName(gen)}: ${headerValue(gen)}`);
  const body = gen.text(VALUE_CHARS, 30, 0.05);
  if (gen.chance(0.7))
    lines.push(`Content-Length: ${gen.chance(0.9) ? Buffer.byteLength(body, 'latin1') : gen.int(0, 100)}`);
  const eol = gen.chance(0.95) ? '\r\n' : gen.pick(['\n', '\r', '\r\r\n']);
  return Buffer.from(`${lines.join(eol)}${eol}${eol}${body}`, gen.chance(0.8) ? 'latin1' : 'utf8');
}

/** How the proxy answered, so that a run that never reached the interesting cases fails. */
const outcomes = { relayed: 0, badGateway: 0, cut: 0, forwarded: 0 };

describe('proxy over real sockets, seeded', () => {
  it('relays 1,500 generated upstream replies: no fault, a well-formed answer or a cut, never their status text', {
    timeout: 180_000,
  }, async () => {
    await forAll(1_500, async (gen) => {
      nextReply = upstreamBytes(gen);
      const answer = await exchange(
        Buffer.from(
          `GET http://127.0.0.1:${upstreamPort}/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
        ),
      );
      expect(faults).toEqual([]);
      const parsed = head(answer);
      if (!parsed) {
        outcomes.cut++;
        return;
      }
      if (parsed.status === 502) outcomes.badGateway++;
      else outcomes.relayed++;
      expect(parsed.status).toBeGreaterThanOrEqual(200);
      expect(parsed.status).toBeLessThanOrEqual(599);
      // Node's standard phrase (or its 'unknown' for a code without one), never the upstream's.
      expect(parsed.reason).toBe(STATUS_CODES[parsed.status] ?? 'unknown');
      for (const line of parsed.headers) {
        const colon = line.indexOf(':');
        expect(colon).toBeGreaterThan(0);
        expect(() => validateHeaderName(line.slice(0, colon))).not.toThrow();
        expect(line.slice(colon + 1)).toMatch(/^[\t\x20-\x7e\x80-\xff]*$/);
      }
    });
  });

  it('forwards 1,500 generated sandbox requests: no fault, and the upstream sees only well-formed end-to-end headers', {
    timeout: 180_000,
  }, async () => {
    await forAll(1_500, async (gen) => {
      received = [];
      const method = gen.pick(['GET', 'GET', 'POST', 'PUT', 'DELETE', 'get', 'G\x01T', 'CONNECT', '']);
      const target = gen.pick([
        `http://127.0.0.1:${echoPort}/p?q=1`,
        `http://127.0.0.1:${echoPort}/p?q=1`,
        `http://127.0.0.1:${echoPort}/${gen.text('abc/%?', 8, 0.3)}`,
        `/relative`,
        `127.0.0.1:${echoPort}`,
        `http://[::1]:${echoPort}/`,
        gen.text(VALUE_CHARS, 20, 0.3),
      ]);
      const lines = [`${method} ${target} HTTP/1.1`, `Host: 127.0.0.1:${echoPort}`];
      const count = gen.int(0, 4);
      for (let i = 0; i < count; i++) lines.push(`${headerName(gen)}: ${headerValue(gen)}`);
      lines.push('Connection: close');
      const eol = gen.chance(0.95) ? '\r\n' : gen.pick(['\n', '\r']);
      await exchange(Buffer.from(`${lines.join(eol)}${eol}${eol}`, gen.chance(0.8) ? 'latin1' : 'utf8'));
      expect(faults).toEqual([]);
      if (received.length > 0) outcomes.forwarded++;
      for (let i = 0; i < received.length; i += 2) {
        const name = received[i] as string;
        expect(() => validateHeaderName(name)).not.toThrow();
        expect(received[i + 1]).toMatch(/^[\t\x20-\x7e\x80-\xff]*$/);
        // Node's client adds its own Connection and, for a body of unknown length, chunked framing;
        // the sandbox's hop-by-hop headers never pass.
        const lower = name.toLowerCase();
        if (lower === 'transfer-encoding') expect(received[i + 1]).toBe('chunked');
        else if (lower === 'connection') expect(received[i + 1]).toMatch(/^(keep-alive|close)$/);
        else expect(HOP_BY_HOP).not.toContain(lower);
      }
    });
  });

  it('reported what it refused and never a fault', () => {
    console.error(`proxy properties: base seed ${BASE_SEED}, outcomes ${JSON.stringify(outcomes)}`);
    // The generators reach every branch: relayed replies, refused ones, forwarded requests. The
    // bounds sit far below the means (about 175, 1,270 and 170 of 1,500; a fresh seed each run),
    // so only a generator that stopped reaching a branch fails them.
    expect(outcomes.relayed).toBeGreaterThan(100);
    expect(outcomes.badGateway).toBeGreaterThan(150);
    expect(outcomes.forwarded).toBeGreaterThan(100);
    expect(events.some((e) => e.decision === 'bad-upstream')).toBe(true);
    expect(events.filter((e) => e.decision === 'fault')).toEqual([]);
    expect(Number.isInteger(BASE_SEED)).toBe(true);
  });
});
