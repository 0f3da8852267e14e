import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultPinLockFile, parseRegistrySpec, readPinLock } from './npx-pin.js';

const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-pin-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npx pins', () => {
  it('parses registry specs; paths, URLs and git are not pinned; a range is refused', () => {
    expect(parseRegistrySpec('pkg')).toEqual({ name: 'pkg', selector: { kind: 'tag', value: 'latest' } });
    expect(parseRegistrySpec('@s/p@1.2.3')).toEqual({
      name: '@s/p',
      selector: { kind: 'version', value: '1.2.3' },
    });
    expect(parseRegistrySpec('pkg@next')).toEqual({ name: 'pkg', selector: { kind: 'tag', value: 'next' } });
    for (const spec of [
      './dir',
      '/abs/dir',
      'file:x',
      'https://h/x.tgz',
      'git+https://h/r.git',
      'user/repo',
    ]) {
      expect(parseRegistrySpec(spec)).toBeUndefined();
    }
    expect(() => parseRegistrySpec('pkg@^1.2.0')).toThrow(/cannot be pinned; give an exact version/);
  });

  it('reads a missing lock as empty and fails closed on a damaged one', () => {
    expect(readPinLock(join(dir, 'none.json')).pins).toEqual([]);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ v: 1, pins: [{ name: 'x', version: '1.0.0; rm -rf /' }] }));
    expect(() => readPinLock(bad)).toThrow(/damaged/);
    writeFileSync(bad, '{"v":1,"pins":[');
    expect(() => readPinLock(bad)).toThrow(/damaged/);
  });

  it('keeps the lock per user: XDG_STATE_HOME, else ~/.local/state', () => {
    expect(defaultPinLockFile({ XDG_STATE_HOME: '/s' }, '/h')).toBe('/s/mcp-sandbox/npx-lock.json');
    expect(defaultPinLockFile({}, '/h')).toBe('/h/.local/state/mcp-sandbox/npx-lock.json');
  });
});
