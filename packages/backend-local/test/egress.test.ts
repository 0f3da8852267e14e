/**
 * Transparent egress: programs that know nothing of proxies reach a granted name through the
 * sandbox's DNS responder and listeners, and are refused everything else, with the denial in
 * the trace and one hint on stderr. The upstreams are local servers: a test resolver says the
 * granted name has a public address, and a test dialer connects that address to the local
 * server, so the decision code runs exactly as in production and nothing leaves this machine.
 */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, createServer, type Server, Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Sandbox, SandboxEvent } from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../src/index.js';
import { run } from './helpers.js';
import { makeTestCa, type TestCa } from './tls-fixture.js';

const PUBLIC_TEST_ADDRESS = '93.184.216.34';
const GRANTED = 'api.granted.test';
const LINE_PORT = 7000;

// A fetch whose connection is closed at once can be dropped by undici without settling; the
// timer keeps the process alive until every URL has an answer (or none within 15 s).
const FETCH = String.raw`
const out = (v) => console.log(JSON.stringify(v));
const alive = setInterval(() => {}, 1000);
const settle = (p) => Promise.race([p, new Promise((_, no) => setTimeout(() => no(new Error('no answer')), 15000))]);
(async () => {
  for (const url of process.argv.slice(1)) {
    try {
      const r = await settle(fetch(url));
      out({ url, status: r.status, body: await r.text() });
    } catch (e) {
      out({ url, error: e.cause?.code ?? e.code ?? e.message });
    }
  }
  clearInterval(alive);
  process.exit(0);
})();
`;

const HTTPS_GET = String.raw`
const https = require('node:https');
const out = (v) => console.log(JSON.stringify(v));
const get = (url) => new Promise((done) => {
  https.get(url, (r) => {
    let body = '';
    r.on('data', (d) => (body += d));
    r.on('end', () => { out({ url, status: r.statusCode, body }); done(); });
  }).on('error', (e) => { out({ url, error: e.code ?? e.message }); done(); });
});
(async () => { for (const url of process.argv.slice(1)) await get(url); })();
`;

const PYTHON = String.raw`
import json, sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
for url in sys.argv[1:]:
    try:
        with opener.open(url, timeout=10) as r:
            print(json.dumps({"url": url, "status": r.status, "body": r.read().decode()}))
    except Exception as e:
        print(json.dumps({"url": url, "error": type(e).__name__ + ": " + str(getattr(e, "reason", e))}))
`;

const CURL = `for url in "$@"; do body=$(curl --noproxy '*' -sS --max-time 10 "$url" 2>&1); code=$?; printf '{"url":"%s","exit":%d,"body":"%s"}\\n' "$url" "$code" "$body"; done`;

const LINE = String.raw`
const net = require('node:net');
const out = (v) => console.log(JSON.stringify(v));
const ask = (host, port) => new Promise((done) => {
  const s = net.connect(port, host);
  let reply = '';
  s.on('connect', () => s.end('PING ' + host + '\n'));
  s.on('data', (d) => (reply += d));
  s.on('end', () => { out({ host, reply }); done(); });
  s.on('error', (e) => { out({ host, error: e.code }); done(); });
});
(async () => { for (const host of process.argv.slice(2)) await ask(host, Number(process.argv[1])); })();
`;

type Reply = {
  url?: string;
  host?: string;
  status?: number;
  body?: string;
  error?: string;
  exit?: number;
  reply?: string;
};

let ca: TestCa;
let https: HttpsServer;
let http: HttpServer;
let line: Server;
const ports = { https: 0, http: 0, line: 0 };

/** The test dialer: only the public test address, mapped to the local servers by port. */
function dial(address: string, port: number): Socket {
  const local = { 443: ports.https, 80: ports.http, [LINE_PORT]: ports.line }[port];
  if (address !== PUBLIC_TEST_ADDRESS || local === undefined) {
    const refused = new Socket();
    process.nextTick(() =>
      refused.destroy(new Error(`test dialer: ${address}:${port} is not a test upstream`)),
    );
    return refused;
  }
  return connect({ host: '127.0.0.1', port: local, allowHalfOpen: true });
}

const addresses: Record<string, readonly string[]> = {
  [GRANTED]: [PUBLIC_TEST_ADDRESS],
  'loopback.granted.test': ['127.0.0.1'],
  'private.granted.test': ['10.0.0.5'],
  'metadata.granted.test': ['169.254.169.254'],
  // An address of one of this host's own interfaces (not loopback), e.g. its LAN address.
  'self.granted.test': [ownAddress()],
};

function ownAddress(): string {
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) if (!entry.internal && entry.family === 'IPv4') return entry.address;
  }
  throw new Error('this machine has no non-loopback IPv4 address to test with');
}
const resolve = async (name: string) => {
  const found = addresses[name];
  if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found;
};

beforeAll(async () => {
  ca = makeTestCa([GRANTED, '*.granted.test']);
  https = createHttpsServer({ key: ca.key, cert: ca.cert }, (req, res) => res.end(`tls ${req.url}`));
  http = createHttpServer((req, res) => res.end(`plain ${req.url}`));
  line = createServer({ allowHalfOpen: true }, (socket) => {
    let text = '';
    socket.on('data', (d) => {
      text += d;
    });
    socket.on('end', () => socket.end(`PONG ${text.trim()}\n`));
  });
  for (const [key, server] of [
    ['https', https],
    ['http', http],
    ['line', line],
  ] as const) {
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    ports[key] = (server.address() as { port: number }).port;
  }
});

afterAll(() => {
  https?.close();
  http?.close();
  line?.close();
  ca?.dispose();
});

interface Session {
  box: Sandbox;
  events: SandboxEvent[];
  warnings: string[];
}

async function open(allow: readonly string[]): Promise<Session> {
  const events: SandboxEvent[] = [];
  const warnings: string[] = [];
  const logger = { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) };
  const box = await createLocalBackend({
    logger,
    hostEnv: {
      ...process.env,
      NODE_EXTRA_CA_CERTS: ca.caFile,
      SSL_CERT_FILE: ca.caFile,
      CURL_CA_BUNDLE: ca.caFile,
    },
    resolve,
    dial,
  }).create({
    sessionId: 'egress',
    env: {},
    ttlMs: 60_000,
    network: { allow },
    onEvent: (event) => events.push(event),
  });
  return { box, events, warnings };
}

const replies = (stdout: string): Reply[] =>
  stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Reply);

describe('programs that know nothing of proxies reach a granted name, and only that', () => {
  let session: Session;
  beforeAll(async () => {
    session = await open([GRANTED, `${GRANTED}:${LINE_PORT}`]);
  });
  afterAll(() => session?.box.close());

  const expectDenied = (name: string) => {
    expect(session.events).toContainEqual({ type: 'egress-denied', host: name, via: 'dns' });
    const hints = session.warnings.filter((w) => w.includes(name));
    expect(hints).toEqual([
      `the server tried ${name}, which is not granted; to allow it: --allow-net ${name}`,
    ]);
  };
  const expectTransparent = (port: number) =>
    expect(session.events).toContainEqual(
      expect.objectContaining({
        type: 'proxy',
        decision: 'allow',
        method: 'transparent',
        host: GRANTED,
        port,
      }),
    );

  it("Node 20's global fetch", async () => {
    const result = await run(session.box, [
      'node',
      '-e',
      FETCH,
      `https://${GRANTED}/fetch`,
      'https://fetch.denied.test/',
    ]);
    const [granted, denied] = replies(result.stdout);
    expect(granted).toEqual({ url: `https://${GRANTED}/fetch`, status: 200, body: 'tls /fetch' });
    expect(denied?.error).toBe('ENOTFOUND');
    expectTransparent(443);
    expectDenied('fetch.denied.test');
  });

  it('https.get with no agent', async () => {
    const result = await run(session.box, [
      'node',
      '-e',
      HTTPS_GET,
      `https://${GRANTED}/get`,
      'https://get.denied.test/',
    ]);
    const [granted, denied] = replies(result.stdout);
    expect(granted).toEqual({ url: `https://${GRANTED}/get`, status: 200, body: 'tls /get' });
    expect(denied?.error).toBe('ENOTFOUND');
    expectDenied('get.denied.test');
  });

  it("Debian's python3 urllib, with proxies turned off", async () => {
    const result = await run(session.box, [
      '/usr/bin/python3',
      '-c',
      PYTHON,
      `https://${GRANTED}/py`,
      'https://py.denied.test/',
    ]);
    const [granted, denied] = replies(result.stdout);
    expect(granted).toEqual({ url: `https://${GRANTED}/py`, status: 200, body: 'tls /py' });
    expect(denied?.error).toMatch(/URLError: .*(Name or service not known|No address)/);
    expectDenied('py.denied.test');
  });

  it("curl --noproxy '*'", async () => {
    const result = await run(session.box, [
      '/bin/sh',
      '-c',
      CURL,
      'sh',
      `https://${GRANTED}/curl`,
      `http://${GRANTED}/plain`,
      'https://curl.denied.test/',
    ]);
    const [granted, plain, denied] = replies(result.stdout);
    expect(granted).toEqual({ url: `https://${GRANTED}/curl`, exit: 0, body: 'tls /curl' });
    expect(plain).toEqual({ url: `http://${GRANTED}/plain`, exit: 0, body: 'plain /plain' });
    expect(denied?.exit).toBe(6); // could not resolve host
    expectTransparent(80);
    expectDenied('curl.denied.test');
  });

  it('a raw TCP line protocol on a port granted as host:port', async () => {
    const result = await run(session.box, [
      'node',
      '-e',
      LINE,
      String(LINE_PORT),
      GRANTED,
      'line.denied.test',
    ]);
    const [granted, denied] = replies(result.stdout);
    expect(granted).toEqual({ host: GRANTED, reply: `PONG PING ${GRANTED}\n` });
    expect(denied?.error).toBe('ENOTFOUND');
    expectTransparent(LINE_PORT);
    expectDenied('line.denied.test');
  });

  it('keeps one address per name for the session, and the proxy variables for programs that use them', async () => {
    const probe = String.raw`require('dns').lookup(process.argv[1], (e, a) => console.log(JSON.stringify({ a, proxy: process.env.HTTPS_PROXY })))`;
    const first = replies((await run(session.box, ['node', '-e', probe, GRANTED])).stdout)[0] as {
      a?: string;
      proxy?: string;
    };
    const second = replies(
      (await run(session.box, ['node', '-e', probe, GRANTED.toUpperCase()])).stdout,
    )[0] as { a?: string };
    expect(first.a).toMatch(/^127\.77\.\d+\.\d+$/);
    expect(second.a).toBe(first.a);
    expect(first.proxy).toBe('http://127.0.0.1:3128');
  });
});

// Runs inside: one CONNECT through the proxy the variables name.
const CONNECT = String.raw`
const http = require('node:http');
const proxy = new URL(process.env.HTTPS_PROXY);
const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: process.argv[1] });
req.on('connect', (res, socket) => { console.log(JSON.stringify({ status: res.statusCode })); socket.destroy(); });
req.on('error', (e) => console.log(JSON.stringify({ error: e.code })));
req.end();
`;

describe('the address checks hold on both paths', () => {
  const names = [
    'loopback.granted.test',
    'private.granted.test',
    'metadata.granted.test',
    'self.granted.test',
  ];
  let session: Session;
  beforeAll(async () => {
    session = await open(names);
  });
  afterAll(() => session?.box.close());

  // Node's fetch sometimes waits for an answer on a refused transparent connection instead of
  // failing at once (the FETCH helper gives up after 15 s and reports it): room for four of those.
  it("refuses a granted name that resolves to loopback, a private range, the metadata service or this host's own address", {
    timeout: 120_000,
  }, async () => {
    for (const [name, why] of [
      ['loopback.granted.test', 'loopback'],
      ['private.granted.test', 'private'],
      ['metadata.granted.test', 'link-local'],
      ['self.granted.test', "this host's own address"],
    ] as const) {
      const transparent = await run(session.box, ['node', '-e', FETCH, `http://${name}/`]);
      expect(
        replies(transparent.stdout)[0],
        `${name}: ${transparent.code} ${transparent.stderr}`,
      ).toMatchObject({
        error: expect.any(String),
      });
      const viaProxy = await run(session.box, ['node', '-e', CONNECT, `${name}:443`]);
      expect(replies(viaProxy.stdout)[0]).toEqual({ status: 403 });
      for (const method of ['transparent', 'CONNECT']) {
        expect(session.events, `${name} ${method}`).toContainEqual(
          expect.objectContaining({
            type: 'proxy',
            decision: 'deny',
            method,
            host: name,
            reason: expect.stringContaining(why),
          }),
        );
      }
    }
    // Granted names: refused for where they point, not for a missing grant, so no grant hint;
    // one line each, once, naming the rule and the explicit-IP grant for who really means it.
    expect(session.warnings.filter((w) => w.includes('not granted'))).toEqual([]);
    for (const [name, why] of [
      ['loopback.granted.test', 'loopback'],
      ['private.granted.test', 'private'],
      ['metadata.granted.test', 'link-local'],
      ['self.granted.test', "this host's own address"],
    ] as const) {
      const said = session.warnings.filter((w) => w.startsWith(`${name} `));
      expect(said, name).toHaveLength(1);
      expect(said[0]).toMatch(
        new RegExp(
          `^${name.replace(/\./g, '\\.')} is granted but unreachable from this host: it resolves to (\\S+), which is refused \\(.*${why}.*\\); if you mean that address, grant it explicitly: --allow-net \\1$`,
        ),
      );
    }
    expect(session.events.filter((e) => e.type === 'egress-denied')).toEqual([]);
  });

  it('closes a connection to a loopback address the responder never handed out', async () => {
    const result = await run(session.box, ['node', '-e', LINE, '443', '127.77.200.1', '127.0.0.1']);
    for (const reply of replies(result.stdout)) expect(reply.reply ?? '').toBe('');
    expect(session.events.filter((e) => e.type === 'proxy' && e.decision === 'allow')).toEqual([]);
  });

  it('records a CONNECT refused as not granted as a denial, with one hint', async () => {
    await run(session.box, ['node', '-e', CONNECT, 'elsewhere.test:5432']);
    await run(session.box, ['node', '-e', CONNECT, 'elsewhere.test:5432']);
    expect(session.events).toContainEqual({
      type: 'egress-denied',
      host: 'elsewhere.test',
      port: 5432,
      via: 'proxy',
    });
    expect(session.warnings.filter((w) => w.includes('elsewhere.test'))).toEqual([
      'the server tried elsewhere.test:5432, which is not granted; to allow it: --allow-net elsewhere.test:5432',
    ]);
  });
});

describe("--allow-net '*' keeps its meaning", () => {
  let session: Session;
  beforeAll(async () => {
    session = await open(['*']);
  });
  afterAll(() => session?.box.close());

  it('reaches any public name transparently, with the same address checks', async () => {
    const result = await run(session.box, [
      'node',
      '-e',
      FETCH,
      `https://${GRANTED}/star`,
      'http://metadata.granted.test/latest/meta-data/',
    ]);
    const [granted, metadata] = replies(result.stdout);
    expect(granted).toEqual({ url: `https://${GRANTED}/star`, status: 200, body: 'tls /star' });
    expect(metadata?.error).toBeDefined();
    expect(session.events).toContainEqual(
      expect.objectContaining({
        type: 'proxy',
        decision: 'deny',
        method: 'transparent',
        host: 'metadata.granted.test',
        reason: expect.stringContaining('link-local'),
      }),
    );
    // Under '*' too, the refused address is said once, with the rule; nothing else is.
    expect(session.warnings).toEqual([
      expect.stringMatching(
        /^metadata\.granted\.test is granted but unreachable from this host: it resolves to \S+, which is refused \(.*link-local.*\); /,
      ),
    ]);
  });
});

// Waits until the responder's UDP socket exists (it starts alongside the server when nothing is
// granted), then looks a name up and tries a host service: there is still no network.
const NO_GRANTS = String.raw`
const fs = require('node:fs');
const net = require('node:net');
const out = (v) => console.log(JSON.stringify(v));
const started = Date.now();
const up = () => fs.readFileSync('/proc/net/udp', 'utf8').includes('01004D7F:0035');
(async () => {
  while (!up() && Date.now() - started < 10000) await new Promise((r) => setTimeout(r, 20));
  out({ responder: up() });
  try { await fetch(process.argv[1]); out({ fetched: true }); } catch (e) { out({ error: e.cause?.code ?? e.message }); }
  await new Promise((done) => {
    const s = net.connect(Number(process.argv[2]), '127.0.0.1');
    s.on('connect', () => { out({ host: 'reached' }); s.destroy(); done(); });
    s.on('error', (e) => { out({ host: e.code }); done(); });
  });
})();
`;

describe('without grants', () => {
  it('still has no network, and a refused lookup names the flag that would allow it', async () => {
    const session = await open([]);
    try {
      const result = await run(session.box, [
        'node',
        '-e',
        NO_GRANTS,
        'https://api.github.com/',
        String(ports.http),
      ]);
      expect(replies(result.stdout)).toEqual([
        { responder: true },
        { error: 'ENOTFOUND' },
        { host: 'ECONNREFUSED' },
      ]);
      expect(session.events).toContainEqual({ type: 'egress-denied', host: 'api.github.com', via: 'dns' });
      expect(session.warnings).toEqual([
        'the server tried api.github.com, which is not granted; to allow it: --allow-net api.github.com',
      ]);
      // Nothing to reach through: no proxy variables.
      const env = await run(session.box, [
        'node',
        '-e',
        'console.log(JSON.stringify({ p: process.env.HTTPS_PROXY ?? null }))',
      ]);
      expect(replies(env.stdout)).toEqual([{ p: null }]);
    } finally {
      await session.box.close();
    }
  });

  it('has no responder at all with denialHints off', async () => {
    const box = await createLocalBackend({ denialHints: false }).create({
      sessionId: 'quiet',
      env: {},
      ttlMs: 30_000,
    });
    try {
      const probe = String.raw`console.log(JSON.stringify({ udp: require('fs').readFileSync('/proc/net/udp', 'utf8').includes(':0035') }))`;
      expect(replies((await run(box, ['node', '-e', probe])).stdout)).toEqual([{ udp: false }]);
    } finally {
      await box.close();
    }
  });
});
