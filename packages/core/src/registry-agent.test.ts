import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryError, resolveFromRegistry } from './npx-pin.js';
import { registryAgent } from './registry-agent.js';

const INTEGRITY = `sha512-${Buffer.alloc(64, 1).toString('base64')}`;
let server: Server;
let registry = '';
const open = new Set<Socket>();

beforeAll(async () => {
  server = createServer((_req, res) => {
    const body = { versions: { '1.0.0': { dist: { integrity: INTEGRITY } } } };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket: Socket) => {
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

const ask = (agent: Awaited<ReturnType<typeof registryAgent>>, url = registry) =>
  resolveFromRegistry(url, 'pkg', { kind: 'version', value: '1.0.0' }, { agent, timeoutMs: 5_000 });

describe('registryAgent: shared connections for many registry questions', () => {
  it('answers over kept connections, at most maxSockets of them, all ended by close()', async () => {
    const agent = await registryAgent(registry, {}, 2);
    const answers = await Promise.all(Array.from({ length: 6 }, () => ask(agent)));
    expect(answers.every((a) => a.integrity === INTEGRITY)).toBe(true);
    expect(open.size).toBeGreaterThan(0);
    expect(open.size).toBeLessThanOrEqual(2);
    agent.close();
    agent.close();
    for (let i = 0; i < 50 && open.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(open.size).toBe(0);
  });

  it('refuses what is not an http(s) registry, and a question of another protocol than its own', async () => {
    await expect(registryAgent('file:///etc/', {}, 2)).rejects.toThrow(/not an http\(s\) registry/);
    const agent = await registryAgent(registry, {}, 2);
    try {
      await expect(ask(agent, registry.replace('http:', 'https:'))).rejects.toBeInstanceOf(RegistryError);
    } finally {
      agent.close();
    }
  });
});
