import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvdClient } from '../src/envd.js';
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '../src/testing/index.js';

let fake: FakeE2B;
let id: string;
let token: string;
beforeAll(async () => {
  fake = await startFakeE2B();
  const response = await fetch(`${fake.apiUrl}/v2/sandboxes`, {
    method: 'POST',
    headers: { 'X-API-KEY': FAKE_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ templateID: 'base', timeout: 60 }),
  });
  const created = (await response.json()) as { sandboxID: string; envdAccessToken: string };
  id = created.sandboxID;
  token = created.envdAccessToken;
});
afterAll(async () => {
  await fake.close();
});

const client = (version: string) =>
  new EnvdClient(
    { url: fake.sandboxUrl, headers: { 'E2b-Sandbox-Id': id, 'X-Access-Token': token }, version },
    { maxFrameBytes: 1024 * 1024, requestTimeoutMs: 5_000 },
  );

describe('the capped envd client on older templates', () => {
  it.each([['0.6.3'], ['0.5.0'], ['0.3.9']])('uploads a file on envd %s', async (version) => {
    const data = Buffer.from([0, 1, 2, 255, 10]);
    await client(version).writeFile(`/home/user/up-${version}.bin`, data);
    expect(readFileSync(join(fake.sandboxes.get(id)!.home, `up-${version}.bin`))).toEqual(data);
  });

  it('knows which envd can close stdin', () => {
    expect(client('0.5.2').supportsCloseStdin).toBe(true);
    expect(client('0.5.1').supportsCloseStdin).toBe(false);
  });

  it('refuses a wrong access token as E_E2B_AUTH', async () => {
    const wrong = new EnvdClient(
      {
        url: fake.sandboxUrl,
        headers: { 'E2b-Sandbox-Id': id, 'X-Access-Token': 'wrong' },
        version: '0.6.3',
      },
      { maxFrameBytes: 1024 * 1024, requestTimeoutMs: 5_000 },
    );
    await expect(wrong.writeFile('/home/user/x', Buffer.from('x'))).rejects.toMatchObject({
      code: 'E_E2B_AUTH',
    });
  });
});
