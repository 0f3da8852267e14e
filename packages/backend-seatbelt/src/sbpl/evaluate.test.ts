import { describe, expect, it } from 'vitest';
import { SbplSyntaxError } from '../errors.js';
import { decide, opCovers, parseProfile } from './evaluate.js';

const profile = parseProfile(`
(version 1)
(deny default)
; a comment with "quotes" and (parens)
(allow file-read* (subpath "/a"))
(deny file-read-data (literal "/a/secret"))
(allow file-read-data (prefix "/a/secret-ok"))
(deny file* (regex #"^/a/.*\\.key$"))
(allow file-write* (require-all (subpath "/w") (require-not (literal "/w/ro"))))
(allow mach-lookup (global-name "com.x") (global-name-prefix "org.y."))
`);
const read = (path: string, op = 'file-read-data') => decide(profile, { op, path }).action;

describe('the SBPL evaluator (Apple’s published semantics)', () => {
  it('denies by default', () => expect(read('/b')).toBe('deny'));
  it('subpath covers the path and what is below it, not a longer name', () => {
    expect(read('/a')).toBe('allow');
    expect(read('/a/x/y')).toBe('allow');
    expect(read('/ab')).toBe('deny');
  });
  it('the last matching rule wins', () => {
    expect(read('/a/secret')).toBe('deny');
    expect(read('/a/secret', 'file-read-metadata')).toBe('allow');
    expect(read('/a/secret-ok/z')).toBe('allow');
    expect(read('/a/secret-ok/z.key')).toBe('deny');
  });
  it('prefix is a string prefix, literal an exact path', () => {
    expect(read('/a/secret-okay')).toBe('allow');
    expect(read('/a/secret/')).toBe('allow');
  });
  it('require-all and require-not combine filters', () => {
    expect(decide(profile, { op: 'file-write-create', path: '/w/f' }).action).toBe('allow');
    expect(decide(profile, { op: 'file-write-create', path: '/w/ro' }).action).toBe('deny');
  });
  it('operation groups: file* covers file-read* covers file-read-data', () => {
    expect(opCovers('file*', 'file-read-data')).toBe(true);
    expect(opCovers('file-read*', 'file-write-data')).toBe(false);
    expect(opCovers('file-read-data', 'file-read-metadata')).toBe(false);
    expect(opCovers('ipc-posix-shm', 'ipc-posix-shm-write-data')).toBe(true);
  });
  it('Mach names: exact or prefix', () => {
    expect(decide(profile, { op: 'mach-lookup', name: 'com.x' }).action).toBe('allow');
    expect(decide(profile, { op: 'mach-lookup', name: 'com.xy' }).action).toBe('deny');
    expect(decide(profile, { op: 'mach-lookup', name: 'org.y.z' }).action).toBe('allow');
  });
  it('a hard link is refused only when both readings of file-link refuse it, and the new name is created', () => {
    const links = parseProfile(`(version 1) (deny default)
      (allow file-write* (subpath "/w") (subpath "/v"))
      (allow file-link (subpath "/w"))`);
    const link = (path: string, newPath: string) => decide(links, { op: 'hard-link', path, newPath }).action;
    expect(link('/w/a', '/w/b')).toBe('allow');
    // Matched against the existing file: refused; against the new name: allowed. It counts as allowed.
    expect(link('/secret', '/w/b')).toBe('allow');
    expect(link('/w/a', '/v/b')).toBe('allow');
    expect(link('/secret', '/v/b')).toBe('deny');
    // No file-write-create of the new name: refused under any reading.
    expect(link('/w/a', '/elsewhere/b')).toBe('deny');
    expect(() => decide(links, { op: 'hard-link', path: '/w/a' })).toThrow(/newPath/);
  });
  it('fails closed on what it cannot read or does not model', () => {
    expect(() => parseProfile('(version 1) (allow file-read* (subpath "/a")')).toThrow(SbplSyntaxError);
    expect(() => parseProfile('(version 1) (allow file-read*)')).toThrow(/no \(allow\|deny default\)/);
    const odd = parseProfile('(deny default) (allow file-read* (extension "x"))');
    expect(() => decide(odd, { op: 'file-read-data', path: '/a' })).toThrow(/does not model/);
  });
});
