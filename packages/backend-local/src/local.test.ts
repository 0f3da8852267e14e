import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkMountsSpareHostState, createLocalBackend, parseByteSize } from './local.js';

const base = mkdtempSync(join(tmpdir(), 'mcpsandbox-local-unit-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('parseByteSize', () => {
  it('takes bytes and binary units', () => {
    expect(parseByteSize('1048576')).toBe(2 ** 20);
    expect(parseByteSize('64M')).toBe(64 * 2 ** 20);
    expect(parseByteSize('512MiB')).toBe(512 * 2 ** 20);
    expect(parseByteSize('1g')).toBe(2 ** 30);
    expect(parseByteSize('8k')).toBe(8192);
  });

  it('refuses anything else, and sizes too small for a tmpfs', () => {
    for (const text of ['', 'lots', '-1M', '1.5G', '1T', '100', '1M;rm']) {
      expect(parseByteSize(text), text).toBeUndefined();
    }
  });

  it('a bad tmpSize or shmSize backend option is a usage error naming the option', () => {
    expect(() => createLocalBackend({ settings: { shmSize: 'lots' } })).toThrow(/shmSize must be a size/);
    expect(() => createLocalBackend({ settings: { tmpSize: '0' } })).toThrow(/tmpSize must be a size/);
  });
});

describe('checkMountsSpareHostState', () => {
  const stateDir = join(base, 'state');
  const cacheRoot = join(base, 'home', '.cache', 'npm');
  mkdirSync(join(stateDir, 'mcp-sandbox-abc', 'home'), { recursive: true });
  mkdirSync(join(stateDir, 'other'), { recursive: true });
  mkdirSync(join(cacheRoot, 'entry'), { recursive: true });
  const places = { stateDir, cacheRoot };
  const rw = (hostPath: string) => [{ hostPath, sandboxPath: '/data', mode: 'rw' as const }];

  it('refuses a rw mount containing or inside the cache, or over a sandbox state directory', () => {
    expect(() => checkMountsSpareHostState(rw(join(base, 'home')), places)).toThrow(/install cache/);
    expect(() => checkMountsSpareHostState(rw(join(cacheRoot, 'entry')), places)).toThrow(/install cache/);
    expect(() => checkMountsSpareHostState(rw(base), places)).toThrow(/install cache/);
    expect(() => checkMountsSpareHostState(rw(stateDir), places)).toThrow(/state directory/);
    expect(() => checkMountsSpareHostState(rw(join(stateDir, 'mcp-sandbox-abc', 'home')), places)).toThrow(
      /state directory/,
    );
  });

  it('allows read-only mounts of them and rw mounts beside them (a project under the OS temp dir)', () => {
    expect(() =>
      checkMountsSpareHostState([{ hostPath: base, sandboxPath: '/data', mode: 'ro' }], places),
    ).not.toThrow();
    expect(() => checkMountsSpareHostState(rw(join(stateDir, 'other')), places)).not.toThrow();
  });
});
