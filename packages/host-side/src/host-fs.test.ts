import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FdPathStrategy, useFdPathStrategy } from './fd-paths.js';
import {
  closeDir,
  lstatAt,
  type OpenDir,
  openDirAt,
  openOwnedDir,
  readFileAt,
  removeAt,
  sealTree,
  writeFileAt,
} from './host-fs.js';

let base: string;
let tree: string;
let outside: string;
let dir: OpenDir;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'mcpsandbox-hostfs-'));
  tree = join(base, 'tree');
  outside = join(base, 'outside');
  mkdirSync(tree, { mode: 0o755 });
  mkdirSync(outside);
  writeFileSync(join(outside, 'victim'), 'host data', { mode: 0o644 });
  dir = openOwnedDir(tree);
});

afterEach(() => {
  closeDir(dir);
  execFileSync('chmod', ['-R', 'u+rwx', base]);
  rmSync(base, { recursive: true, force: true });
});

// Each case runs with /proc/self/fd (Linux) and with the portable strategy macOS uses.
const strategies: readonly FdPathStrategy[] = ['proc', 'portable'];
describe.each(strategies)('host-fs (%s): operations on a tree the sandbox wrote', (strategy) => {
  let previous: FdPathStrategy;
  beforeAll(() => {
    previous = useFdPathStrategy(strategy);
  });
  afterAll(() => {
    useFdPathStrategy(previous);
  });

  it('a directory swapped for a link after the host opened it: nothing outside is written or removed', () => {
    mkdirSync(join(tree, 'sub'));
    const sub = openDirAt(dir, 'sub') as OpenDir;
    try {
      renameSync(join(tree, 'sub'), join(tree, 'moved'));
      symlinkSync(outside, join(tree, 'sub'));
      const attempts = [
        () => writeFileAt(sub, 'victim', 'planted'),
        () => removeAt(sub, 'victim'),
        () => sealTree(sub, { fromUid: process.getuid?.() ?? 0 }),
      ];
      for (const attempt of attempts) {
        if (strategy === 'portable') expect(attempt).toThrow(/changed under the host/);
        else attempt();
      }
      expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('host data');
    } finally {
      closeDir(sub);
    }
  });

  it('a link planted above an opened directory: the host does not follow it', () => {
    mkdirSync(join(tree, 'a', 'b'), { recursive: true });
    mkdirSync(join(outside, 'b'));
    writeFileSync(join(outside, 'b', 'victim'), 'host data');
    const a = openDirAt(dir, 'a') as OpenDir;
    const b = openDirAt(a, 'b') as OpenDir;
    try {
      renameSync(join(tree, 'a'), join(tree, 'a2'));
      symlinkSync(outside, join(tree, 'a'));
      if (strategy === 'portable') {
        expect(() => removeAt(b, 'victim')).toThrow(/changed under the host/);
        expect(() => readFileAt(b, ['victim'], 100)).toThrow(/changed under the host/);
      } else {
        removeAt(b, 'victim');
        expect(readFileAt(b, ['victim'], 100)).toBeUndefined();
      }
      expect(readFileSync(join(outside, 'b', 'victim'), 'utf8')).toBe('host data');
    } finally {
      closeDir(b);
      closeDir(a);
    }
  });

  it('reads a regular file, and refuses a symlink as the file or on the way', () => {
    mkdirSync(join(tree, 'a'));
    writeFileSync(join(tree, 'a', 'f.json'), '{}');
    expect(readFileAt(dir, ['a', 'f.json'], 100)?.toString()).toBe('{}');
    symlinkSync(join(outside, 'victim'), join(tree, 'a', 'link.json'));
    expect(() => readFileAt(dir, ['a', 'link.json'], 100)).toThrow(/symlinks are refused/);
    symlinkSync(outside, join(tree, 'b'));
    expect(() => readFileAt(dir, ['b', 'victim'], 100)).toThrow(/symlinks are refused/);
    expect(readFileAt(dir, ['a', 'missing'], 100)).toBeUndefined();
    expect(() => readFileAt(dir, ['..', 'outside', 'victim'], 100)).toThrow(/path component/);
  });

  it('refuses a FIFO in place of a file without blocking, and files over the size limit', () => {
    execFileSync('mkfifo', [join(tree, 'fifo')]);
    expect(() => readFileAt(dir, ['fifo'], 100)).toThrow(/not a regular file/);
    writeFileSync(join(tree, 'big'), 'x'.repeat(200));
    expect(() => readFileAt(dir, ['big'], 100)).toThrow(/larger than/);
  });

  it('looks at a link without following it', () => {
    symlinkSync(join(outside, 'victim'), join(tree, 'bin'));
    expect(lstatAt(dir, ['bin'])?.isSymbolicLink()).toBe(true);
    expect(lstatAt(dir, ['nothing'])).toBeUndefined();
  });

  it('writes by exclusive create and rename: a planted link is replaced, its target untouched', () => {
    symlinkSync(join(outside, 'victim'), join(tree, 'marker.json'));
    writeFileAt(dir, 'marker.json', 'host marker');
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('host data');
    expect(readFileSync(join(tree, 'marker.json'), 'utf8')).toBe('host marker');
  });

  it('removes a tree with links out and locked directories, and nothing outside it', () => {
    mkdirSync(join(tree, 'x', 'locked', 'deep'), { recursive: true });
    writeFileSync(join(tree, 'x', 'locked', 'deep', 'f'), 'f');
    symlinkSync(outside, join(tree, 'x', 'to-outside'));
    symlinkSync(join(outside, 'victim'), join(tree, 'x', 'locked', 'to-victim'));
    chmodSync(join(tree, 'x', 'locked'), 0o000);
    removeAt(dir, 'x');
    expect(existsSync(join(tree, 'x'))).toBe(false);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('host data');
  });

  it('refuses to remove an entry that is not the directory it was told about', () => {
    mkdirSync(join(tree, 'y'));
    const other = statSync(outside);
    expect(() => removeAt(dir, 'y', { dev: other.dev, ino: other.ino })).toThrow(/no longer/);
    expect(existsSync(join(tree, 'y'))).toBe(true);
  });

  it('seals a tree: no setuid bits, no group/other write, links and their targets left alone', () => {
    writeFileSync(join(tree, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    chmodSync(join(tree, 'tool'), 0o6777);
    mkdirSync(join(tree, 'open'));
    chmodSync(join(tree, 'open'), 0o777);
    chmodSync(join(outside, 'victim'), 0o666);
    symlinkSync(join(outside, 'victim'), join(tree, 'open', 'link'));
    const uid = process.getuid?.() ?? 0;
    sealTree(dir, { fromUid: uid });
    expect(statSync(join(tree, 'tool')).mode & 0o7777).toBe(0o755);
    expect(statSync(join(tree, 'open')).mode & 0o7777).toBe(0o755);
    expect(statSync(join(outside, 'victim')).mode & 0o7777).toBe(0o666);
  });

  it('refuses a directory writable by others as a root the host relies on', () => {
    chmodSync(outside, 0o777);
    expect(() => openOwnedDir(outside)).toThrow(/writable by nobody else/);
    symlinkSync(tree, join(base, 'link-to-tree'));
    expect(() => openOwnedDir(join(base, 'link-to-tree'))).toThrow(/not a symlink/);
  });
});
