import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closeDir, openOwnedDir } from '../host-fs.js';
import { dropOptional, hasInstallScripts, optionalPackages } from './optional.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-optional-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let n = 0;

function prefixWith(lock: unknown): string {
  const prefix = join(work, String(n++));
  mkdirSync(join(prefix, 'node_modules'), { recursive: true });
  writeFileSync(join(prefix, 'package-lock.json'), typeof lock === 'string' ? lock : JSON.stringify(lock));
  return prefix;
}

function withPrefix<T>(prefix: string, use: (dir: ReturnType<typeof openOwnedDir>) => T): T {
  const dir = openOwnedDir(prefix);
  try {
    return use(dir);
  } finally {
    closeDir(dir);
  }
}

describe('optional packages from npm lock', () => {
  it('takes only keys that are node_modules paths, never . or .. components', () => {
    const prefix = prefixWith({
      packages: {
        '': { optional: true },
        'node_modules/a': { optional: true },
        'node_modules/a/node_modules/@s/b': { optional: true },
        'node_modules/required': {},
        'node_modules/..': { optional: true },
        'node_modules/../../outside': { optional: true },
        'node_modules/x/../y': { optional: true },
        'node_modules/@s': { optional: true },
        'other/a': { optional: true },
      },
    });
    const found = withPrefix(prefix, optionalPackages);
    expect([...found].sort()).toEqual(['node_modules/a', 'node_modules/a/node_modules/@s/b']);
  });

  it('gives none for a lock that does not parse, is not an object, or is a symlink', () => {
    expect(withPrefix(prefixWith('{not json'), optionalPackages).size).toBe(0);
    expect(withPrefix(prefixWith([1, 2]), optionalPackages).size).toBe(0);
    const prefix = join(work, String(n++));
    mkdirSync(prefix);
    const elsewhere = join(work, 'elsewhere.json');
    writeFileSync(elsewhere, JSON.stringify({ packages: { 'node_modules/a': { optional: true } } }));
    symlinkSync(elsewhere, join(prefix, 'package-lock.json'));
    expect(withPrefix(prefix, optionalPackages).size).toBe(0);
  });

  it('removes the package below the prefix without following a symlinked parent', () => {
    const prefix = prefixWith({});
    const outside = join(work, 'outside');
    mkdirSync(join(outside, 'victim'), { recursive: true });
    writeFileSync(join(outside, 'victim', 'keep'), 'keep');
    // node_modules/a is a symlink to a directory outside: removing a/node_modules/victim must not reach it.
    symlinkSync(outside, join(prefix, 'node_modules', 'a'));
    expect(() =>
      withPrefix(prefix, (dir) => dropOptional(dir, 'node_modules/a/node_modules/victim')),
    ).toThrow(/symlinks are refused/);
    expect(existsSync(join(outside, 'victim', 'keep'))).toBe(true);
    mkdirSync(join(prefix, 'node_modules', 'b', 'lib'), { recursive: true });
    expect(withPrefix(prefix, (dir) => dropOptional(dir, 'node_modules/b'))).toBe('b');
    expect(existsSync(join(prefix, 'node_modules', 'b'))).toBe(false);
  });
});

describe('whether the scripts step has anything to build', () => {
  /** A prefix whose npm record of what it extracted is `record` (a string as written). */
  function scripts(record: unknown): boolean {
    const prefix = prefixWith({});
    if (record !== undefined)
      writeFileSync(
        join(prefix, 'node_modules', '.package-lock.json'),
        typeof record === 'string' ? record : JSON.stringify(record),
      );
    return withPrefix(prefix, hasInstallScripts);
  }

  it('no: no package npm extracted has an install script', () => {
    expect(scripts({ packages: { 'node_modules/a': { version: '1.0.0' }, 'node_modules/b': {} } })).toBe(
      false,
    );
  });

  it('yes: one has, or the record is missing, does not parse, or says something else', () => {
    expect(
      scripts({ packages: { 'node_modules/a': {}, 'node_modules/b': { hasInstallScript: true } } }),
    ).toBe(true);
    expect(scripts({ packages: { 'node_modules/a': { hasInstallScript: 'yes' } } })).toBe(true);
    expect(scripts({ packages: { 'node_modules/a': 1 } })).toBe(true);
    expect(scripts({ packages: [] })).toBe(true);
    expect(scripts('{')).toBe(true);
    expect(scripts(undefined)).toBe(true);
  });
});
