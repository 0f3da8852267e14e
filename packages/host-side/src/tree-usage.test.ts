/**
 * Counting a tree a sandbox writes, and sealing it, is bounded work: both stop at the limit,
 * follow no link, open no file, and refuse what they cannot count.
 */
import { execFileSync } from 'node:child_process';
import {
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDir, type OpenDir, openOwnedDir, sealTree } from './host-fs.js';
import { cacheFullError, installBudget, installQuota, quotaError } from './npx/quota.js';
import { MAX_TREE_DEPTH, measureTree, TreeCounter, type TreeOver } from './tree-usage.js';

let base: string;
let tree: string;
let dir: OpenDir;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'mcpsandbox-tree-usage-'));
  tree = join(base, 'tree');
  mkdirSync(tree, { mode: 0o755 });
  dir = openOwnedDir(tree);
});

afterEach(() => {
  closeDir(dir);
  rmSync(base, { recursive: true, force: true });
});

const WIDE = { files: 1_000_000, bytes: 2 ** 40 };

/** A directory of `count` empty files, made by one process (fast). */
function manyFiles(path: string, count: number): void {
  mkdirSync(path, { recursive: true });
  execFileSync('sh', ['-c', 'cd "$1" && seq 1 "$2" | xargs touch', 'sh', path, String(count)]);
}

describe('measureTree', () => {
  it("counts a file's bytes once however many links it has (an install linked out of its own cache)", () => {
    mkdirSync(join(tree, 'cache'));
    mkdirSync(join(tree, 'venv'));
    writeFileSync(join(tree, 'cache', 'big'), Buffer.alloc(1024 * 1024));
    for (let i = 0; i < 9; i++) linkSync(join(tree, 'cache', 'big'), join(tree, 'venv', `big-${i}`));
    // Ten names, one file of 1 MiB on the disk: under a 2 MiB limit; every name still counts as an entry.
    const measured = measureTree(dir, { files: 1000, bytes: 2 * 1024 * 1024 });
    expect(measured).toMatchObject({ files: 12 });
    expect(typeof measured === 'object' && measured.bytes).toBeLessThan(2 * 1024 * 1024);
    expect(measureTree(dir, { files: 11, bytes: 2 ** 40 })).toBe('files');
  });

  it('counts every entry and its apparent size; follows no link out of the tree', () => {
    const outside = join(base, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'big'), Buffer.alloc(100_000));
    mkdirSync(join(tree, 'a', 'b'), { recursive: true });
    writeFileSync(join(tree, 'a', 'b', 'f'), Buffer.alloc(1000));
    symlinkSync(outside, join(tree, 'a', 'out'));
    symlinkSync(join(outside, 'big'), join(tree, 'big-link'));
    execFileSync('mkfifo', [join(tree, 'fifo')]);
    const usage = measureTree(dir, WIDE);
    expect(typeof usage).toBe('object');
    const { files, bytes } = usage as { files: number; bytes: number };
    // a, a/b, a/b/f, a/out, big-link, fifo
    expect(files).toBe(6);
    expect(bytes).toBeLessThan(100_000);
    expect(bytes).toBeGreaterThanOrEqual(1000);
  });

  it('stops at the first entry past the file limit, whatever the tree holds', () => {
    manyFiles(join(tree, 'flood'), 500);
    expect(measureTree(dir, { files: 100, bytes: 2 ** 40 })).toBe('files');
  });

  it('counts a sparse file at its full length', () => {
    writeFileSync(join(tree, 'sparse'), '');
    truncateSync(join(tree, 'sparse'), 2 ** 34);
    expect(measureTree(dir, { files: 100, bytes: 2 ** 30 })).toBe('bytes');
  });

  it('refuses a tree deeper than any package rather than walk it', () => {
    // One level at a time, relative: deeper than one path may name.
    execFileSync('sh', [
      '-c',
      `cd "$1" && for i in $(seq 0 ${MAX_TREE_DEPTH + 1}); do mkdir d && cd d; done`,
      'sh',
      tree,
    ]);
    expect(measureTree(dir, WIDE)).toBe('depth');
  });
});

describe('sealTree with a counter', () => {
  it('refuses at the first entry past the limit, having sealed no more than the limit', () => {
    manyFiles(join(tree, 'flood'), 300);
    const seen: TreeOver[] = [];
    const counter = new TreeCounter({ files: 50, bytes: 2 ** 40 }, (over) => {
      seen.push(over);
      return new Error(`over ${over}`);
    });
    const uid = process.getuid?.() ?? 0;
    expect(() => sealTree(dir, { fromUid: uid, counter })).toThrow('over files');
    expect(seen).toEqual(['files']);
    expect(counter.files).toBe(51);
  });

  it('counts the whole tree when it fits', () => {
    manyFiles(join(tree, 'few'), 20);
    writeFileSync(join(tree, 'few', 'data'), Buffer.alloc(5000));
    const counter = new TreeCounter({ files: 100, bytes: 2 ** 20 }, (over) => new Error(over));
    sealTree(dir, { fromUid: process.getuid?.() ?? 0, counter });
    expect(counter.files).toBe(22);
    expect(counter.bytes).toBeGreaterThanOrEqual(5000);
    expect(statSync(join(tree, 'few', 'data')).mode & 0o022).toBe(0);
  });
});

describe('the install quota', () => {
  it('reads each limit from its variable, with defaults, and refuses a malformed one naming it', () => {
    const quota = installQuota({
      MCP_SANDBOX_INSTALL_MAX_FILES: '5000',
      MCP_SANDBOX_INSTALL_CACHE_MAX_BYTES: '20G',
    });
    expect(quota.entry.files).toBe(5000);
    expect(quota.entry.bytes).toBe(2 * 2 ** 30);
    expect(quota.total.bytes).toBe(20 * 2 ** 30);
    for (const bad of ['-1', '0', 'lots', '1e9', '5000;rm']) {
      expect(() => installQuota({ MCP_SANDBOX_INSTALL_MAX_FILES: bad })).toThrow(
        /MCP_SANDBOX_INSTALL_MAX_FILES must be/,
      );
    }
    expect(() => installQuota({ MCP_SANDBOX_INSTALL_MAX_BYTES: '1.5G' })).toThrow(
      /MCP_SANDBOX_INSTALL_MAX_BYTES must be/,
    );
  });

  it('gives an install what is left of the total, and names the total and how to make room when that is the limit', () => {
    const quota = installQuota({ MCP_SANDBOX_INSTALL_CACHE_MAX_FILES: '1000' });
    const budget = installBudget(quota, { files: 900, bytes: 0 }, '/c');
    expect(budget.limit.files).toBe(100);
    const error = quotaError('pkg@1.0.0', budget, 'files');
    expect(error.code).toBe('E_INSTALL_QUOTA');
    expect(error.message).toContain('past its total limit of 1000 files');
    expect(error.message).toContain('MCP_SANDBOX_INSTALL_CACHE_MAX_FILES=');
    expect(cacheFullError('pkg@1.0.0', budget)).toBeUndefined();
    const full = installBudget(quota, { files: 1000, bytes: 0 }, '/c');
    expect(cacheFullError('pkg@1.0.0', full)?.message).toContain('rm -rf /c/<entry>');
  });
});
