import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDir, type OpenDir, openOwnedDir } from '../host-fs.js';
import { cacheUsage } from './cache-usage.js';
import { installQuota } from './quota.js';

let base: string;
let root: OpenDir;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'mcpsandbox-cache-usage-'));
  root = openOwnedDir(base);
});

afterEach(() => {
  closeDir(root);
  rmSync(base, { recursive: true, force: true });
});

const KEY = (n: number) => String(n).padStart(24, 'a');

/** An entry or staging directory with `files` files of 100 bytes under pkg/, and maybe usage.json. */
function entry(name: string, files: number, usage?: string): void {
  mkdirSync(join(base, name, 'pkg'), { recursive: true });
  for (let i = 0; i < files; i++) writeFileSync(join(base, name, 'pkg', `f${i}`), Buffer.alloc(100));
  if (usage !== undefined) writeFileSync(join(base, name, 'usage.json'), usage);
}

describe('cacheUsage', () => {
  it('adds kept usage, counts entries without it and other installs under way, and leaves out its own staging', () => {
    const quota = installQuota({});
    entry(KEY(1), 1, '{"files":1000,"bytes":5000000}');
    entry(KEY(2), 3);
    entry(`${KEY(3)}.tmp-other`, 2);
    entry(`${KEY(4)}.tmp-mine`, 50);
    entry('logs', 40);
    // A kept usage that does not parse is ignored: the entry is counted as it is.
    entry(KEY(5), 4, '{"files":-1,"bytes":"lots"}');
    expect(cacheUsage(root, quota, `${KEY(4)}.tmp-mine`)).toEqual({
      files: 1000 + 3 + 2 + 4,
      bytes: 5_000_000 + 300 + 200 + 400,
    });
  });

  it('stops once past the total, however many entries are left', () => {
    const quota = installQuota({ MCP_SANDBOX_INSTALL_CACHE_MAX_FILES: '10' });
    for (let n = 1; n <= 30; n++) entry(KEY(n), 0, '{"files":6,"bytes":0}');
    expect(cacheUsage(root, quota, 'none').files).toBe(12);
  });
});
