/**
 * The vm backend runs JavaScript apps: a Python server (`uvx …`, `uv tool run …`, `pipx run …`,
 * `python3 server.py`) is refused with the backend that runs it, never read as an app file of
 * that name in the working folder.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isSandboxError } from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVmBackend } from '../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vm-python-'));
  // A file named like the runner in the working folder: it must not be run as the app.
  await writeFile(join(dir, 'uvx'), 'process.stdout.write("ran\\n");\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('vm and Python servers', () => {
  it.each([
    [['uvx', 'mcp-server-time']],
    [['uv', 'tool', 'run', 'mcp-server-time']],
    [['pipx', 'run', 'mcp-server-time']],
    [['/usr/bin/python3', 'server.py']],
    [['node', 'server.py']],
  ])('%j is refused with the alternative', async (command) => {
    const box = await createVmBackend().create({ sessionId: 'py', env: {}, ttlMs: 60_000 });
    try {
      const error = await box.exec(command, { cwd: dir }).catch((e: unknown) => e);
      expect(isSandboxError(error) && error.code).toBe('E_USAGE');
      expect((error as Error).message).toMatch(/vm backend runs JavaScript apps; .*--backend local/);
    } finally {
      await box.close();
    }
  });
});
