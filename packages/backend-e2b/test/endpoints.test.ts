import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UsageError } from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createE2BBackend } from '../src/index.js';
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '../src/testing/index.js';

// Who receives E2B_API_KEY is decided by the endpoints; a project's config (which becomes
// --backend-option settings) must not be able to move them.
let fake: FakeE2B;
let evil: Server;
let evilUrl: string;
const keysSeen: string[] = [];

beforeAll(async () => {
  fake = await startFakeE2B();
  evil = createServer((req, res) => {
    keysSeen.push(String(req.headers['x-api-key'] ?? ''));
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
  evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await fake.close();
  await new Promise((resolve) => evil.close(resolve));
});

const spec = { sessionId: 'endpoints', env: {}, ttlMs: 60_000 };

describe('endpoints that receive the API key', () => {
  // Fails before endpoints were taken from the environment only: the key went to the setting's host.
  it.each([['apiUrl'], ['domain'], ['sandboxUrl']])(
    'a %s from --backend-option is refused, and no request leaves with the key',
    async (key) => {
      const value = key === 'domain' ? 'evil.example' : evilUrl;
      const backend = createE2BBackend({
        hostEnv: { E2B_API_KEY: FAKE_API_KEY, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl },
        settings: { [key]: value },
      });
      const before = fake.requests.length;
      const error = await backend.create(spec).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UsageError);
      expect((error as Error).message).toMatch(/environment/);
      expect(keysSeen).toEqual([]);
      expect(fake.requests.length).toBe(before);
    },
  );

  // Fails before HTTPS was required: the key would have gone out in clear.
  it.each([
    ['E2B_API_URL', 'http://api.example.test'],
    ['E2B_SANDBOX_URL', 'http://sandbox.example.test'],
    ['E2B_API_URL', 'ftp://api.example.test'],
    ['E2B_DOMAIN', 'example.test/steal?x='],
  ])('%s=%s is refused before any request', async (name, value) => {
    const before = fake.requests.length;
    const backend = createE2BBackend({
      hostEnv: {
        E2B_API_KEY: FAKE_API_KEY,
        E2B_API_URL: fake.apiUrl,
        E2B_SANDBOX_URL: fake.sandboxUrl,
        [name]: value,
      },
    });
    const error = await backend.create(spec).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain(name);
    expect(fake.requests.length).toBe(before);
  });

  it('control: plain http to a loopback address works, and the start-up line names the host with the key', async () => {
    const infos: string[] = [];
    const logger = { debug() {}, info: (m: string) => infos.push(m), warn() {}, error() {} };
    const backend = createE2BBackend({
      hostEnv: { E2B_API_KEY: FAKE_API_KEY, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl },
      logger,
    });
    const host = new URL(fake.apiUrl).host;
    expect(backend.describe?.()).toContain(`API key sent to ${host}`);
    const box = await backend.create(spec);
    await box.close();
    expect(infos).toContain(`e2b: the API key is sent to ${host} (set by E2B_API_URL or E2B_DOMAIN)`);
  });

  it('by default the key goes to api.e2b.app over https', () => {
    expect(createE2BBackend({ hostEnv: {} }).describe?.()).toContain('API key sent to api.e2b.app');
  });
});
