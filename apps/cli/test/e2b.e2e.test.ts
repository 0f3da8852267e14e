import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '@mcpsandbox/backend-e2b/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, EVERYTHING, spawnBin } from './helpers.js';

// The real `e2b` SDK inside the real binary, pointed at an offline fake of E2B's API and envd.
let fake: FakeE2B;
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterAll(() => fake.close());

const e2bEnv = () => ({
  E2B_API_KEY: FAKE_API_KEY,
  E2B_API_URL: fake.apiUrl,
  E2B_SANDBOX_URL: fake.sandboxUrl,
});

describe('mcp-sandbox run --backend e2b (offline, against the fake)', () => {
  it('lists and calls tools of server-everything with the real SDK client', async () => {
    const { client, stderr } = await connect(
      ['--backend', 'e2b', '--', 'node', EVERYTHING, 'stdio'],
      e2bEnv(),
    );
    try {
      expect((await client.listTools()).tools).toHaveLength(13);
      const echo = await client.callTool({ name: 'echo', arguments: { message: 'from a micro-VM' } });
      expect(echo.content).toEqual([{ type: 'text', text: 'Echo: from a micro-VM' }]);
      const env = await client.callTool({ name: 'get-env', arguments: {} });
      // The key that created the VM never crosses into it.
      expect(JSON.stringify(env)).not.toContain(FAKE_API_KEY);
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('backend e2b, isolation microvm');
  });

  it('refuses to start without E2B_API_KEY: exit 2, one line, nothing created', async () => {
    const before = fake.requests.length;
    const run = spawnBin(['run', '--backend', 'e2b', '--', 'node', EVERYTHING], {
      PATH: process.env.PATH,
      E2B_API_URL: fake.apiUrl,
      E2B_SANDBOX_URL: fake.sandboxUrl,
    });
    const result = await run.result;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/E2B_API_KEY/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(fake.requests.slice(before).filter((r) => r.startsWith('POST'))).toEqual([]);
  });

  // Fails before the clamp: envd's exit code 256 became the binary's exit code, which is 0.
  it('an exit code outside 0-255 from envd makes the binary exit 125, not 0', async () => {
    fake.attack({ match: 'exit-256', end: { exitCode: 256, exited: true, status: 'exit status 256' } });
    const run = spawnBin(['run', '--backend', 'e2b', '--', 'sh', '-c', 'exit 0 # exit-256'], {
      PATH: process.env.PATH,
      ...e2bEnv(),
    });
    const result = await run.result;
    expect(result.code).toBe(125);
  });

  // Fails before endpoints came only from the environment: a config's backend option sent the key.
  it('--backend-option apiUrl=… is refused with exit 2, and the key goes nowhere', async () => {
    const keys: string[] = [];
    const evil = createServer((req, res) => {
      keys.push(String(req.headers['x-api-key'] ?? ''));
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
      const run = spawnBin(
        ['run', '--backend', 'e2b', '--backend-option', `apiUrl=${url}`, '--', 'node', EVERYTHING],
        { PATH: process.env.PATH, ...e2bEnv() },
      );
      const result = await run.result;
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/E2B_API_URL in the environment/);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(keys).toEqual([]);
    } finally {
      await new Promise((resolve) => evil.close(resolve));
    }
  });
});
