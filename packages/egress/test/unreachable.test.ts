/**
 * A granted host this host cannot reach: the sandbox sees only a 502 or a closed connection, so
 * the host side records `egress-failed` and says it once on stderr, in words built from an error
 * code or an address rule. Real proxy, real sockets; only the resolver is a stand-in (it is the
 * attacker's DNS answer, or a name that does not resolve).
 */
import { once } from 'node:events';
import { request } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Logger, SandboxEvent } from '@mcpsandbox/core';
import { afterEach, describe, expect, it } from 'vitest';
import { DenialReporter, SyntheticNames } from '../src/egress.js';
import { parseGrant, type Resolver } from '../src/grants.js';
import { EgressProxy } from '../src/proxy.js';
import { TransparentEgress } from '../src/transparent.js';

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function listen(server: Server, host = '127.0.0.1'): Promise<number> {
  servers.push(server);
  server.listen(0, host);
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

/** A port nothing listens on: bound, read, closed. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  const port = await listen(probe);
  probe.close();
  servers.pop();
  return port;
}

function recorder(): { logger: Logger; warnings: string[]; events: SandboxEvent[] } {
  const warnings: string[] = [];
  const events: SandboxEvent[] = [];
  const logger: Logger = {
    info() {},
    debug() {},
    error() {},
    warn: (m: string) => warnings.push(m),
  } as Logger;
  return { logger, warnings, events };
}

/** A proxy under `grants`, its events going to the trace list and through the reporter. */
async function proxied(grants: string[], resolve: Resolver) {
  const r = recorder();
  const reporter = new DenialReporter((e) => r.events.push(e), r.logger);
  const proxy = new EgressProxy({
    grants: grants.map(parseGrant),
    resolve,
    onEvent: (event) => {
      r.events.push(event);
      reporter.observe(event);
    },
  });
  const listener = createServer();
  proxy.attach(listener);
  const port = await listen(listener);
  return { ...r, port, close: () => proxy.close() };
}

async function connectVia(proxyPort: number, target: string): Promise<string> {
  const socket = connect(proxyPort, '127.0.0.1');
  socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  let text = '';
  socket.on('data', (c: Buffer) => {
    text += c.toString();
  });
  await once(socket, 'close');
  return text;
}

async function getVia(proxyPort: number, url: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: proxyPort, path: url, headers: { host: 'x' } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const enotfound: Resolver = async () => {
  throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
};

describe('a granted host the host side cannot reach', () => {
  it('a name that does not resolve: one stderr line per host with the code, however often it is tried', async () => {
    const p = await proxied(['api.example.com'], enotfound);
    try {
      expect(await connectVia(p.port, 'api.example.com:443')).toMatch(/^HTTP\/1\.1 403/);
      expect(await getVia(p.port, 'http://api.example.com/')).toBe(403);
      expect(p.warnings).toEqual([
        'api.example.com is granted but unreachable from this host: it does not resolve here (ENOTFOUND)',
      ]);
      // The proxy's deny already carries the reason (the summary counts it as failed): no second record.
      expect(p.events.filter((e) => e.type === 'egress-failed')).toEqual([]);
    } finally {
      p.close();
    }
  });

  it('a connection refused after the grants let it through: egress-failed with the code, and the line', async () => {
    const port = await closedPort();
    const p = await proxied(['127.0.0.1'], enotfound);
    try {
      expect(await connectVia(p.port, `127.0.0.1:${port}`)).toMatch(/^HTTP\/1\.1 502/);
      expect(await getVia(p.port, `http://127.0.0.1:${port}/`)).toBe(502);
      // Control: the grants allowed both attempts.
      expect(p.events.filter((e) => e.type === 'proxy' && e.decision === 'allow')).toHaveLength(2);
      const failed = p.events.filter((e) => e.type === 'egress-failed');
      expect(failed).toEqual([
        { type: 'egress-failed', host: '127.0.0.1', port, via: 'proxy', reason: 'ECONNREFUSED' },
        { type: 'egress-failed', host: '127.0.0.1', port, via: 'proxy', reason: 'ECONNREFUSED' },
      ]);
      expect(p.warnings).toEqual([
        `127.0.0.1 is granted but unreachable from this host: connecting to it port ${port} failed: ECONNREFUSED`,
      ]);
    } finally {
      p.close();
    }
  });

  it('a granted name that resolves to a refused address: the rule and the explicit-IP fix', async () => {
    const p = await proxied(['intranet.example.com'], async () => ['10.1.2.3']);
    try {
      expect(await connectVia(p.port, 'intranet.example.com:443')).toMatch(/^HTTP\/1\.1 403/);
      expect(p.warnings).toHaveLength(1);
      expect(p.warnings[0]).toMatch(
        /^intranet\.example\.com is granted but unreachable from this host: it resolves to 10\.1\.2\.3, which is refused \(.+\); if you mean that address, grant it explicitly: --allow-net 10\.1\.2\.3$/,
      );
    } finally {
      p.close();
    }
  });

  it('attack: an error code or DNS answer carrying text of its own never reaches stderr', async () => {
    const hostile: Resolver = async () => {
      throw Object.assign(new Error('x'), { code: 'EVIL\n\u001b[2Jmcp-sandbox: all good' });
    };
    const p = await proxied(['a.example.com', 'b.example.com'], async (name) =>
      name === 'a.example.com' ? hostile(name) : ['10.0.0.1 --allow-net *'],
    );
    try {
      expect(await connectVia(p.port, 'a.example.com:443')).toMatch(/^HTTP\/1\.1 403/);
      expect(await connectVia(p.port, 'b.example.com:443')).toMatch(/^HTTP\/1\.1 403/);
      // Control: both attempts were decided, with the hostile text in the proxy's own reason.
      expect(p.events.filter((e) => e.type === 'proxy' && e.decision === 'deny')).toHaveLength(2);
      expect(p.warnings).toEqual([
        'a.example.com is granted but unreachable from this host: it does not resolve here',
      ]);
      expect(p.warnings.join('\n')).not.toMatch(/EVIL|all good|\*/);
    } finally {
      p.close();
    }
  });

  it('transparent: a refused connection to a granted name records egress-failed via transparent', async () => {
    const port = await closedPort();
    const r = recorder();
    const names = new SyntheticNames();
    const reporter = new DenialReporter(undefined, r.logger);
    const transparent = new TransparentEgress({
      grants: [parseGrant('svc.example.com')],
      names,
      resolve: async () => ['93.184.216.34'],
      // The checked public address is dialled as the closed local port (nothing leaves this host).
      dial: (_address, _port) => connect({ host: '127.0.0.1', port }),
      onEvent: (event) => {
        r.events.push(event);
        reporter.observe(event);
      },
    });
    const address = names.addressFor('svc.example.com' as never);
    const listener = createServer();
    transparent.attach(listener);
    // The synthetic address stands for the name only on the loopback the sandbox has; here the
    // listener is bound to it where the kernel routes 127/8 to loopback.
    const listenPort = await listen(listener, address);
    try {
      const client: Socket = connect(listenPort, address);
      client.on('error', () => {});
      await once(client, 'close');
      expect(r.events.find((e) => e.type === 'proxy')).toMatchObject({
        decision: 'allow',
        host: 'svc.example.com',
      });
      expect(r.events.find((e) => e.type === 'egress-failed')).toEqual({
        type: 'egress-failed',
        host: 'svc.example.com',
        port: listenPort,
        via: 'transparent',
        reason: 'ECONNREFUSED',
      });
      expect(r.warnings).toEqual([
        `svc.example.com is granted but unreachable from this host: connecting to it port ${listenPort} failed: ECONNREFUSED`,
      ]);
    } finally {
      transparent.close();
    }
  });
});
