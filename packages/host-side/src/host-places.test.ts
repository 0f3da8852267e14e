import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkMountsSpareHostState } from './host-places.js';

const base = mkdtempSync(join(tmpdir(), 'mcpsandbox-places-unit-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

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
