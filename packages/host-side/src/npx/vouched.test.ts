import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LockedTarball, vouchedByRegistry, warmRegistryAgent } from './vouched.js';

// A registry on loopback that counts its connections: the vouch asks one question per tarball,
// and what it opens for them is bounded and closed when it returns, whatever the registry does.
const integrity = (text: string) => `sha512-${createHash('sha512').update(text).digest('base64')}`;
const NAMES = Array.from({ length: 30 }, (_, i) => `pkg-${i}`);
const locked: LockedTarball[] = NAMES.map((name) => ({
  name,
  version: '1.0.0',
  integrity: integrity(name),
}));
/** A name whose answer starts and never ends (the connection held open). */
const STALLS = 'stalls';

let server: Server;
let registry = '';
const open = new Set<Socket>();
let connections = 0;
let questions = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    questions++;
    const [name = '', version] = (req.url ?? '').slice(1).split('/').map(decodeURIComponent);
    if (name === STALLS) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"versions":');
      return;
    }
    const dist = { integrity: integrity(name) };
    // The version's own document, or the packument.
    const body = version ? { name, version, dist } : { name, versions: { '1.0.0': { dist } } };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  // Keeps every connection the client does not close (a registry that never hangs up).
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket: Socket) => {
    connections++;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Waits up to `ms` for the registry to see every connection closed. */
async function allClosed(ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; ) {
    if (open.size === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return open.size === 0;
}

describe('vouchedByRegistry: connections to the registry', () => {
  it('keeps at most `concurrency` connections, reuses them between questions, and leaves none open', async () => {
    connections = 0;
    questions = 0;
    const vouched = await vouchedByRegistry(registry, locked, { trust: {}, concurrency: 4 });
    expect(vouched.map((t) => t.name).sort()).toEqual([...NAMES].sort());
    expect(questions).toBe(NAMES.length);
    expect(connections).toBeLessThanOrEqual(4);
    // Well within the registry's keep-alive: only the host closing them ends them now.
    expect(await allClosed(500)).toBe(true);
  });

  it('a registry that holds an answer open costs that question its timeout, and no connection stays', async () => {
    const stalled: LockedTarball = { name: STALLS, version: '1.0.0', integrity: integrity(STALLS) };
    const started = Date.now();
    const vouched = await vouchedByRegistry(registry, [stalled, ...locked.slice(0, 5)], {
      trust: {},
      concurrency: 2,
      timeoutMs: 300,
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(vouched.map((t) => t.name).sort()).toEqual(NAMES.slice(0, 5).sort());
    expect(await allClosed(500)).toBe(true);
  });

  // The seeding stops when its install step ends: a registry that holds answers open must not
  // hold the install with it until the questions' timeout.
  it('once aborted, ends the questions in flight at once and leaves no connection', async () => {
    const stalled = ['a', 'b', 'c'].map((n) => ({
      name: STALLS,
      version: `1.0.${n.charCodeAt(0)}`,
      integrity: integrity(n),
    }));
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 200);
    const started = Date.now();
    const vouched = await vouchedByRegistry(registry, stalled, {
      trust: {},
      concurrency: 3,
      timeoutMs: 20_000,
      signal: stop.signal,
    });
    expect(vouched).toEqual([]);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(await allClosed(500)).toBe(true);
  });

  it('connections opened ahead serve the vouch, no more are opened, and none stays', async () => {
    const probe = { name: 'pkg-0', version: '1.0.0' };
    connections = 0;
    const agent = warmRegistryAgent(registry, {}, probe, 4);
    // The resolve runs meanwhile; the vouch then takes the agent over.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(connections).toBe(4);
    const vouched = await vouchedByRegistry(registry, locked, { trust: {}, agent });
    expect(vouched).toHaveLength(NAMES.length);
    expect(connections).toBe(4);
    expect(await allClosed(500)).toBe(true);
  });

  it('reaches a registry given by name (looked up once for all its connections)', async () => {
    const byName = registry.replace('127.0.0.1', 'localhost');
    const vouched = await vouchedByRegistry(byName, locked.slice(0, 8), { trust: {}, concurrency: 4 });
    expect(vouched).toHaveLength(8);
    expect(await allClosed(500)).toBe(true);
  });
});
