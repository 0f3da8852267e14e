/**
 * A burst of tunnels to one host (an installer's parallel downloads: uv opens one per file) is
 * one lookup on the host, not one each: a resolver that drops some queries of a burst then costs
 * its retry timeout once at most. Real proxy, real sockets; the resolver is a stand-in that
 * counts. Only a lookup under way is shared: a later decision asks again, and every decision
 * still checks the addresses it gets.
 */
import { once } from 'node:events';
import { connect, createServer, type Server } from 'node:net';
import type { HostName } from '@mcpsandbox/core';
import { afterEach, describe, expect, it } from 'vitest';
import { parseGrant, type Resolver } from '../src/grants.js';
import { EgressProxy } from '../src/proxy.js';

const servers: Server[] = [];
const proxies: EgressProxy[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
  for (const proxy of proxies.splice(0)) proxy.close();
});

/** A resolver that answers `answer` (or fails) after a while, and counts what it was asked. */
function slowResolver(answer: () => readonly string[]): { resolve: Resolver; asked: HostName[] } {
  const asked: HostName[] = [];
  const resolve: Resolver = async (host) => {
    asked.push(host);
    await new Promise((done) => setTimeout(done, 100));
    return answer();
  };
  return { resolve, asked };
}

async function proxy(grants: string[], resolve: Resolver): Promise<number> {
  const egress = new EgressProxy({ grants: grants.map(parseGrant), resolve });
  proxies.push(egress);
  const listener = createServer();
  servers.push(listener);
  egress.attach(listener);
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  return (listener.address() as { port: number }).port;
}

async function connectVia(proxyPort: number, target: string): Promise<string> {
  const socket = connect(proxyPort, '127.0.0.1');
  socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  let text = '';
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  await once(socket, 'close');
  return text.split('\r\n')[0] ?? '';
}

describe('lookups of the egress proxy', () => {
  it('one lookup for a burst of tunnels to one name; each tunnel still checks the answer', async () => {
    // The name resolves to loopback: every decision must still refuse it on its own.
    const { resolve, asked } = slowResolver(() => ['127.0.0.1']);
    const port = await proxy(['files.example.org:443', 'pypi.example.org:443'], resolve);
    const burst = await Promise.all([
      ...Array.from({ length: 20 }, () => connectVia(port, 'files.example.org:443')),
      ...Array.from({ length: 5 }, () => connectVia(port, 'pypi.example.org:443')),
    ]);
    expect(burst.every((line) => line.startsWith('HTTP/1.1 403'))).toBe(true);
    expect(asked.sort()).toEqual(['files.example.org', 'pypi.example.org']);
    // Over: the next tunnel asks again (nothing is kept past the lookup).
    expect(await connectVia(port, 'files.example.org:443')).toMatch(/^HTTP\/1\.1 403/);
    expect(asked.filter((name) => name === 'files.example.org')).toHaveLength(2);
  });

  it('a failed lookup fails the tunnels that waited for it, and the next one asks again', async () => {
    let fail = true;
    const asked: string[] = [];
    const resolve: Resolver = async (host) => {
      asked.push(host);
      await new Promise((done) => setTimeout(done, 100));
      if (fail) throw Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' });
      return ['127.0.0.1'];
    };
    const port = await proxy(['files.example.org:443'], resolve);
    const burst = await Promise.all(
      Array.from({ length: 10 }, () => connectVia(port, 'files.example.org:443')),
    );
    expect(burst.every((line) => line.startsWith('HTTP/1.1 403'))).toBe(true);
    expect(asked).toHaveLength(1);
    fail = false;
    expect(await connectVia(port, 'files.example.org:443')).toMatch(/^HTTP\/1\.1 403/);
    expect(asked).toHaveLength(2);
  });

  it('a resolver that throws at once fails that tunnel only', async () => {
    const resolve: Resolver = () => {
      throw new Error('broken resolver');
    };
    const port = await proxy(['files.example.org:443'], resolve);
    expect(await connectVia(port, 'files.example.org:443')).toMatch(/^HTTP\/1\.1 403/);
  });
});
