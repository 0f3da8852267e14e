import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'first-try-e2e-'));
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('first-try problems are named at start, with the fix (local backend)', () => {
  // Before, a root-owned directory mounted rw while running as root was silently unwritable.
  it('warns when the sandbox user cannot write a rw mount, and the server indeed cannot', async () => {
    const data = join(dir, 'data');
    mkdirSync(data);
    // As root the sandbox runs as uid 65534: root's 0755 directory is not its to write. As a normal
    // user, the sandbox is that user: a 0555 directory is not writable either.
    chmodSync(data, process.getuid?.() === 0 ? 0o755 : 0o555);
    const result = await spawnBin([
      'run',
      '--mount',
      `${data}:rw`,
      '--',
      'sh',
      '-c',
      `touch ${data}/x 2>/dev/null && echo WROTE >&2 || echo DENIED >&2`,
    ]).result;
    expect(result.stderr).toMatch(
      new RegExp(`--mount ${data}:${data}:rw: the sandbox runs as .* which cannot write it`),
    );
    expect(result.stderr).toContain('To let it write:');
    expect(result.stderr, result.stderr).toContain('DENIED');
  });
});
