import { describe, expect, it } from 'vitest';
import { homebrewNodeIo } from '../../test/plans.js';
import { SeatbeltPathError } from '../errors.js';
import { type ClosureIo, dylibClosure, parseOtoolL } from './dylib-closure.js';

const line = (name: string) => `\t${name} (compatibility version 1.0.0, current version 1.0.0)`;

describe("a runtime's dylib closure", () => {
  it('a recorded Homebrew node: every keg lib dir it loads, through the opt links, no system lib', () => {
    const { binary, io } = homebrewNodeIo();
    const closure = dylibClosure(binary, io);
    expect(closure.dirs).toEqual([
      '/opt/homebrew/Cellar/brotli/1.1.0/lib',
      '/opt/homebrew/Cellar/c-ares/1.34.5/lib',
      '/opt/homebrew/Cellar/icu4c@77/77.1/lib',
      '/opt/homebrew/Cellar/libnghttp2/1.66.0/lib',
      '/opt/homebrew/Cellar/libuv/1.51.0/lib',
      '/opt/homebrew/Cellar/openssl@3/3.5.1/lib',
    ]);
    expect(closure.links).toContain('/opt/homebrew/opt/icu4c@77');
    expect(closure.links).toContain('/opt/homebrew/opt/openssl@3/lib/libcrypto.3.dylib');
    expect(closure.links.some((link) => link.startsWith('/usr/lib'))).toBe(false);
  });

  it('parses otool -L: install names only, header skipped', () => {
    expect(
      parseOtoolL(`/x/node:\n${line('/usr/lib/libSystem.B.dylib')}\n${line('@rpath/libfoo (1).dylib')}\n\n`),
    ).toEqual(['/usr/lib/libSystem.B.dylib', '@rpath/libfoo (1).dylib']);
  });

  const fake = (otool: Record<string, string[]>, real: Record<string, string>): ClosureIo => ({
    otoolL: (path) => `${path}:\n${(otool[path] ?? []).map(line).join('\n')}\n`,
    realpath: (path) => {
      const value = real[path] ?? (path in otool ? path : undefined);
      if (value === undefined) throw new Error(`ENOENT ${path}`);
      return value;
    },
  });

  it('a library under a var or etc directory is refused, never shown', () => {
    const io = fake(
      { '/opt/x/bin/node': ['/opt/homebrew/var/evil/libx.dylib'] },
      { '/opt/homebrew/var/evil/libx.dylib': '/opt/homebrew/var/evil/libx.dylib' },
    );
    expect(() => dylibClosure('/opt/x/bin/node', io)).toThrow(SeatbeltPathError);
  });

  it('a cycle of libraries ends; @loader_path and @rpath resolve beside the loader', () => {
    const io = fake(
      {
        '/n/bin/node': ['@rpath/liba.dylib'],
        '/n/lib/liba.dylib': ['@loader_path/libb.dylib'],
        '/n/lib/libb.dylib': ['/n/lib/liba.dylib'],
      },
      {},
    );
    expect(dylibClosure('/n/bin/node', io).dirs).toEqual(['/n/lib']);
  });
});
