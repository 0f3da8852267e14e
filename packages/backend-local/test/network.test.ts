import { createServer, type Server } from 'node:http';
import { type Host, parseHost, type SandboxEvent } from '@mcpsandbox/core';
import { decide, parseGrant } from '@mcpsandbox/egress';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../src/index.js';
import { run } from './helpers.js';

/** A host as the proxy's parsers hand it to `decide`. */
function at(text: string): Host {
  const host = parseHost(text);
  if (host === undefined) throw new Error(`not a host: ${text}`);
  return host;
}

// Runs inside the sandbox: one request through the proxy named by HTTP_PROXY.
const CLIENT = String.raw`
const http = require('node:http');
const [mode, target] = process.argv.slice(1);
const out = (value) => console.log(JSON.stringify(value));
if (!process.env.HTTP_PROXY) {
  http.get(target, (r) => out({ status: r.statusCode })).on('error', (e) => out({ error: e.code }));
} else {
  const proxy = new URL(process.env.HTTP_PROXY);
  if (mode === 'get') {
    http
      .get({ host: proxy.hostname, port: proxy.port, path: target, headers: { host: new URL(target).host } }, (r) => {
        let body = '';
        r.on('data', (d) => (body += d));
        r.on('end', () => out({ status: r.statusCode, body }));
      })
      .on('error', (e) => out({ error: e.code }));
  } else {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        out({ status: res.statusCode });
        return socket.destroy();
      }
      let raw = '';
      socket.on('data', (d) => (raw += d));
      socket.on('end', () => out({ status: 200, body: raw.split('\r\n\r\n')[1] }));
      socket.write('GET /through-tunnel HTTP/1.1\r\nHost: target\r\nConnection: close\r\n\r\n');
    });
    req.on('error', (e) => out({ error: e.code }));
    req.end();
  }
}
`;

let target: Server;
let port: number;
let other: Server;
let otherPort: number;

beforeAll(async () => {
  target = createServer((req, res) => res.end(`target saw ${req.method} ${req.url}`));
  other = createServer((_req, res) => res.end('other'));
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  port = (target.address() as { port: number }).port;
  otherPort = (other.address() as { port: number }).port;
});

afterAll(() => {
  target.close();
  other.close();
});

async function inside(
  allow: readonly string[] | undefined,
  mode: 'get' | 'connect',
  url: string,
  perExec?: string[],
) {
  const events: SandboxEvent[] = [];
  const box = await createLocalBackend().create({
    sessionId: 'net',
    env: {},
    ttlMs: 30_000,
    ...(allow ? { network: { allow } } : {}),
    onEvent: (event) => events.push(event),
  });
  try {
    const result = await run(
      box,
      ['node', '-e', CLIENT, mode, url],
      perExec ? { network: { allow: perExec } } : {},
    );
    const line = result.stdout.trim().split('\n').pop() ?? '';
    return {
      reply: JSON.parse(line || '{}') as { status?: number; body?: string; error?: string },
      events,
      result,
    };
  } finally {
    await box.close();
  }
}

describe('granted egress through the real proxy', () => {
  it('forwards an absolute-URI request to a granted IP:port', async () => {
    const { reply, events } = await inside(
      [`127.0.0.1:${port}`],
      'get',
      `http://127.0.0.1:${port}/hello?x=1`,
    );
    expect(reply).toEqual({ status: 200, body: 'target saw GET /hello?x=1' });
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'proxy', decision: 'allow', method: 'GET', host: '127.0.0.1', port }),
    );
  });

  it('tunnels CONNECT to a granted IP:port', async () => {
    const { reply, events } = await inside([`127.0.0.1:${port}`], 'connect', `127.0.0.1:${port}`);
    expect(reply).toEqual({ status: 200, body: 'target saw GET /through-tunnel' });
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'proxy', decision: 'allow', method: 'CONNECT' }),
    );
  });

  it('refuses a port that was not granted', async () => {
    const { reply, events } = await inside([`127.0.0.1:${port}`], 'get', `http://127.0.0.1:${otherPort}/`);
    expect(reply.status).toBe(403);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'proxy', decision: 'deny', port: otherPort, reason: 'not granted' }),
    );
  });

  it('refuses a granted name that resolves to 127.0.0.1, by CONNECT and by plain HTTP', async () => {
    const viaConnect = await inside([`localhost:${port}`], 'connect', `localhost:${port}`);
    expect(viaConnect.reply.status).toBe(403);
    expect(viaConnect.events).toContainEqual(
      expect.objectContaining({
        decision: 'deny',
        host: 'localhost',
        reason: expect.stringContaining('loopback'),
      }),
    );
    const viaGet = await inside([`localhost:${port}`], 'get', `http://localhost:${port}/`);
    expect(viaGet.reply.status).toBe(403);
  });

  it('has no network at all without grants', async () => {
    const { reply, result } = await inside(undefined, 'get', `http://127.0.0.1:${port}/`);
    expect(reply.error).toBe('ECONNREFUSED');
    expect(result.code).toBe(0);
  });

  it('lets one exec replace the sandbox grants (ExecOptions.network)', async () => {
    const granted = await inside(undefined, 'get', `http://127.0.0.1:${port}/per-exec`, [
      `127.0.0.1:${port}`,
    ]);
    expect(granted.reply).toEqual({ status: 200, body: 'target saw GET /per-exec' });
    const narrowed = await inside([`127.0.0.1:${port}`], 'get', `http://127.0.0.1:${port}/`, [
      `127.0.0.1:${otherPort}`,
    ]);
    expect(narrowed.reply.status).toBe(403);
  });
});

describe('proxy decisions', () => {
  const grants = ['api.example.com', '*.cdn.example.net:443', '10.1.2.3:8080', '[::1]:9000'].map(parseGrant);
  const resolveTo =
    (...addresses: string[]) =>
    async () =>
      addresses;

  it('allows granted names that resolve to public addresses, and pins the checked address', async () => {
    const decision = await decide(grants, at('API.example.com.'), 443, resolveTo('93.184.216.34'));
    expect(decision).toMatchObject({ allow: true, address: '93.184.216.34' });
  });

  it('matches suffix grants on subdomains and their port only', async () => {
    expect((await decide(grants, at('a.cdn.example.net'), 443, resolveTo('1.1.1.1'))).allow).toBe(true);
    expect((await decide(grants, at('a.cdn.example.net'), 80, resolveTo('1.1.1.1'))).allow).toBe(false);
    expect((await decide(grants, at('cdn.example.net'), 443, resolveTo('1.1.1.1'))).allow).toBe(false);
    expect((await decide(grants, at('evilcdn.example.net'), 443, resolveTo('1.1.1.1'))).allow).toBe(false);
  });

  it('refuses names resolving to loopback, private, link-local or metadata addresses', async () => {
    for (const address of [
      '127.0.0.1',
      '10.0.0.5',
      '172.20.1.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.100.100.200',
      '::1',
      'fd00:ec2::254',
      'fe80::1',
      '::ffff:127.0.0.1',
    ]) {
      const decision = await decide(grants, at('api.example.com'), 443, resolveTo('93.184.216.34', address));
      expect(decision.allow, address).toBe(false);
    }
  });

  it('allows a private address only when granted as that explicit IP', async () => {
    expect((await decide(grants, at('10.1.2.3'), 8080)).allow).toBe(true);
    expect((await decide(grants, at('10.1.2.3'), 8081)).allow).toBe(false);
    expect((await decide(grants, at('::1'), 9000)).allow).toBe(true);
    const any = [parseGrant('*')];
    expect((await decide(any, at('169.254.169.254'), 80)).allow).toBe(false);
    expect((await decide(any, at('93.184.216.34'), 80)).allow).toBe(true);
  });

  it('refuses what is not granted and names it', async () => {
    expect(await decide(grants, at('example.org'), 443, resolveTo('1.1.1.1'))).toEqual({
      allow: false,
      reason: 'not granted',
    });
  });

  it('rejects malformed grants with a usage error', () => {
    expect(() => parseGrant('host:99999')).toThrow(/bad port/);
    expect(() => parseGrant('bad host')).toThrow(/bad network grant/);
  });
});
