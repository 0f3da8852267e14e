/**
 * A uvx server on e2b: uv would install the package inside the VM with the server's own
 * environment (its secrets) and network, unpinned, at every start. The backend refuses it in
 * `prepare`, before any process runs in the VM, and names the alternative. (Against the offline
 * fake E2B: the cloud is not reachable from the machines this is tested on.)
 */
import { isSandboxError } from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeE2B, startFakeE2B } from '../src/testing/index.js';
import { fakeBackend } from './helpers.js';

let fake: FakeE2B;
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterAll(async () => {
  await fake.close();
});

describe('e2b and uvx', () => {
  it.each([
    [['uvx', 'mcp-server-time==2026.10.19']],
    [['/usr/local/bin/uvx', '--from', 'mcp-server-git', 'mcp-server-git', '--repository', '/r']],
    [['uv', 'tool', 'run', 'mcp-server-fetch']],
  ])('%j is refused with the reason and the alternative, and nothing runs in the VM', async (command) => {
    const box = await fakeBackend(fake).create({
      sessionId: 'uvx',
      env: { SECRET_TOKEN: 's3cr3t' },
      ttlMs: 60_000,
    });
    try {
      const error = await box.prepare!(command, { stderr: () => undefined }).catch((e: unknown) => e);
      expect(isSandboxError(error) && error.code).toBe('E_USAGE');
      expect((error as Error).message).toMatch(/e2b backend does not run uvx servers/);
      expect((error as Error).message).toContain('--backend local');
      expect(fake.sandboxes.get(box.id)?.starts).toEqual([]);
    } finally {
      await box.close();
    }
  });

  it('control: other commands still pass through prepare unchanged', async () => {
    const box = await fakeBackend(fake).create({ sessionId: 'plain', env: {}, ttlMs: 60_000 });
    try {
      expect(await box.prepare!(['python3', 'server.py'], { stderr: () => undefined })).toEqual([
        'python3',
        'server.py',
      ]);
    } finally {
      await box.close();
    }
  });
});
