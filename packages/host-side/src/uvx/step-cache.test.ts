import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDir, type OpenDir, openOwnedDir, removeAt } from '../host-fs.js';
import { removeSetAside, SET_ASIDE, STEP_CACHE, setStepCacheAside, stepCacheEnv } from './step-cache.js';

let base: string;
let prefix: string;
let outside: string;
let dir: OpenDir;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'mcpsandbox-stepcache-'));
  prefix = join(base, 'pkg');
  outside = join(base, 'outside');
  mkdirSync(join(prefix, 'venv', 'lib'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'victim'), 'host data', { mode: 0o644 });
  writeFileSync(join(outside, 'other'), 'more host data', { mode: 0o644 });
  dir = openOwnedDir(prefix);
});

afterEach(() => {
  closeDir(dir);
  execFileSync('chmod', ['-R', 'u+rwx', base]);
  rmSync(base, { recursive: true, force: true });
});

/** setStepCacheAside on `staging` and its `pkg`, as the uvx install calls it. */
function setAsideIn(staging: string): void {
  const stagingDir = openOwnedDir(staging);
  const prefixDir = openOwnedDir(join(staging, 'pkg'));
  try {
    setStepCacheAside(prefixDir, stagingDir);
  } finally {
    closeDir(prefixDir);
    closeDir(stagingDir);
  }
}

describe("an install's own uv cache", () => {
  it('lives inside the prefix the steps write, and installs by hard links out of it', () => {
    expect(stepCacheEnv('/run/mcp-sandbox/uv/k')).toEqual({
      UV_CACHE_DIR: `/run/mcp-sandbox/uv/k/${STEP_CACHE}`,
      UV_LINK_MODE: 'hardlink',
    });
  });

  it('is removed without following what the sandbox planted in it; linked files keep their data', () => {
    const cache = join(prefix, STEP_CACHE);
    mkdirSync(join(cache, 'archive-v0', 'x'), { recursive: true });
    // A file of the environment linked to one in the cache, as uv's hardlink mode leaves it.
    writeFileSync(join(cache, 'archive-v0', 'x', 'mod.py'), 'print(1)\n');
    linkSync(join(cache, 'archive-v0', 'x', 'mod.py'), join(prefix, 'venv', 'lib', 'mod.py'));
    // What a build script can plant: links to host paths, a FIFO, a directory it locked.
    symlinkSync(join(outside, 'victim'), join(cache, 'link'));
    symlinkSync(outside, join(cache, 'dirlink'));
    execFileSync('mkfifo', [join(cache, 'fifo')]);
    mkdirSync(join(cache, 'locked'));
    symlinkSync(outside, join(cache, 'locked', 'dirlink'));
    writeFileSync(join(cache, 'locked', 'f'), 'x');
    chmodSync(join(cache, 'locked'), 0o500);
    removeAt(dir, STEP_CACHE);
    expect(existsSync(cache)).toBe(false);
    expect(readdirSync(outside).sort()).toEqual(['other', 'victim']);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('host data');
    expect(lstatSync(join(outside, 'victim')).mode & 0o777).toBe(0o644);
    const linked = lstatSync(join(prefix, 'venv', 'lib', 'mod.py'));
    expect(linked.nlink).toBe(1);
    expect(readFileSync(join(prefix, 'venv', 'lib', 'mod.py'), 'utf8')).toBe('print(1)\n');
    expect(readdirSync(prefix)).toEqual(['venv']);
  });

  it('when the cache is itself a link to a host directory, removes the link and nothing it points at', () => {
    symlinkSync(outside, join(prefix, STEP_CACHE));
    removeAt(dir, STEP_CACHE);
    expect(existsSync(join(prefix, STEP_CACHE))).toBe(false);
    expect(readdirSync(outside).sort()).toEqual(['other', 'victim']);
  });

  it('does nothing when the steps made no cache', () => {
    removeAt(dir, STEP_CACHE);
    expect(readdirSync(prefix)).toEqual(['venv']);
  });

  it('set aside: moved beside the environment in one rename, then removed from beside the published entry, following nothing', () => {
    // The install cache root, a staging directory in it, the prefix (pkg) inside that.
    const uvRoot = join(base, 'uv');
    const staging = join(uvRoot, 'k.tmp-1');
    mkdirSync(join(staging, 'pkg', 'venv', 'lib'), { recursive: true });
    const cache = join(staging, 'pkg', STEP_CACHE);
    mkdirSync(join(cache, 'archive-v0', 'x'), { recursive: true });
    writeFileSync(join(cache, 'archive-v0', 'x', 'mod.py'), 'print(1)\n');
    linkSync(join(cache, 'archive-v0', 'x', 'mod.py'), join(staging, 'pkg', 'venv', 'lib', 'mod.py'));
    symlinkSync(join(outside, 'victim'), join(cache, 'link'));
    symlinkSync(outside, join(cache, 'dirlink'));
    execFileSync('mkfifo', [join(cache, 'fifo')]);
    setAsideIn(staging);
    expect(readdirSync(join(staging, 'pkg'))).toEqual(['venv']);
    expect(readdirSync(staging).sort()).toEqual([SET_ASIDE, 'pkg'].sort());
    renameSync(staging, join(uvRoot, 'k'));
    removeSetAside(uvRoot, 'k');
    expect(readdirSync(join(uvRoot, 'k'))).toEqual(['pkg']);
    expect(readdirSync(outside).sort()).toEqual(['other', 'victim']);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('host data');
    expect(lstatSync(join(uvRoot, 'k', 'pkg', 'venv', 'lib', 'mod.py')).nlink).toBe(1);
  });

  it('set aside: a cache that is a link to a host directory moves as a link and is removed as one', () => {
    const uvRoot = join(base, 'uv');
    const staging = join(uvRoot, 'k.tmp-2');
    mkdirSync(join(staging, 'pkg'), { recursive: true });
    symlinkSync(outside, join(staging, 'pkg', STEP_CACHE));
    setAsideIn(staging);
    expect(lstatSync(join(staging, SET_ASIDE)).isSymbolicLink()).toBe(true);
    renameSync(staging, join(uvRoot, 'k'));
    removeSetAside(uvRoot, 'k');
    expect(existsSync(join(uvRoot, 'k', SET_ASIDE))).toBe(false);
    expect(readdirSync(outside).sort()).toEqual(['other', 'victim']);
  });

  it('set aside: nothing to move when the steps made no cache; nothing to remove is no error', () => {
    const uvRoot = join(base, 'uv');
    mkdirSync(join(uvRoot, 'k', 'pkg'), { recursive: true });
    const stagingDir = openOwnedDir(join(uvRoot, 'k'));
    const prefixDir = openOwnedDir(join(uvRoot, 'k', 'pkg'));
    try {
      setStepCacheAside(prefixDir, stagingDir);
    } finally {
      closeDir(prefixDir);
      closeDir(stagingDir);
    }
    removeSetAside(uvRoot, 'k');
    removeSetAside(uvRoot, 'no-such-entry');
    expect(readdirSync(join(uvRoot, 'k'))).toEqual(['pkg']);
  });
});
