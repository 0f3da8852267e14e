import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyIn } from '../src/copy-in.js';

const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-copyin-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const limits = { maxFiles: 2000, maxBytes: 50 * 1024 * 1024 };

describe('copyIn (the local backend copies a `copy` mount)', () => {
  it('copies files and directories; links and FIFOs are left out, never followed, never opened', async () => {
    const src = join(root, 'src');
    mkdirSync(join(src, 'sub'), { recursive: true });
    writeFileSync(join(src, 'a.txt'), 'alpha');
    writeFileSync(join(src, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(src, 'sub', 'b.txt'), 'beta');
    writeFileSync(join(root, 'secret'), 'host secret');
    symlinkSync(join(root, 'secret'), join(src, 'link'));
    symlinkSync(root, join(src, 'dirlink'));
    // A FIFO nobody writes to: opening it for reading would hang the host.
    execFileSync('mkfifo', [join(src, 'pipe')]);
    const dest = join(root, 'dest');
    const result = await copyIn(src, dest, { limits });
    expect(result).toEqual({ files: 3, bytes: 5 + 10 + 4, skipped: 3 });
    expect(readdirSync(dest).sort()).toEqual(['a.txt', 'run.sh', 'sub']);
    expect(readFileSync(join(dest, 'sub', 'b.txt'), 'utf8')).toBe('beta');
    expect(statSync(join(dest, 'run.sh')).mode & 0o777).toBe(0o700);
    expect(statSync(join(dest, 'a.txt')).mode & 0o777).toBe(0o600);
  });

  it('refuses a symlink given as the source, and a tree over the caps', async () => {
    await expect(copyIn(join(root, 'src', 'link'), join(root, 'd2'), { limits })).rejects.toThrow(
      /refusing to follow a symlink/,
    );
    const many = join(root, 'many');
    mkdirSync(many);
    for (let i = 0; i < 4; i++) writeFileSync(join(many, `f${i}`), 'xx');
    await expect(
      copyIn(many, join(root, 'd3'), { limits: { maxFiles: 3, maxBytes: 100 } }),
    ).rejects.toMatchObject({
      code: 'E_COPY_LIMIT',
    });
    await expect(
      copyIn(many, join(root, 'd4'), { limits: { maxFiles: 10, maxBytes: 7 } }),
    ).rejects.toMatchObject({
      code: 'E_COPY_LIMIT',
    });
  });
});

describe('copyIn of a tree the sandbox could have written', () => {
  it('caps directories, entries and depth, naming the cap', async () => {
    const dirs = join(root, 'dirs');
    mkdirSync(dirs);
    for (let i = 0; i < 30; i++) mkdirSync(join(dirs, `d${i}`));
    await expect(copyIn(dirs, join(root, 'd5'), { limits: { ...limits, maxDirs: 20 } })).rejects.toThrow(
      /more than 20 directories; copy a narrower path/,
    );
    await expect(copyIn(dirs, join(root, 'd6'), { limits: { ...limits, maxEntries: 25 } })).rejects.toThrow(
      /more than 25 entries/,
    );
    const deep = join(root, 'deep');
    mkdirSync(join(deep, 'a', 'b', 'c', 'd'), { recursive: true });
    await expect(copyIn(deep, join(root, 'd7'), { limits: { ...limits, maxDepth: 3 } })).rejects.toThrow(
      /more than 3 directory levels/,
    );
    // Control: within the caps the same trees are copied.
    expect(await copyIn(deep, join(root, 'd8'), { limits: { ...limits, maxDepth: 4 } })).toMatchObject({
      skipped: 0,
    });
    expect(readdirSync(join(root, 'd8', 'a', 'b', 'c'))).toEqual(['d']);
  });
});
