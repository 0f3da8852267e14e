import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CachePlaces, checkUserNpmCache } from './user-npm-cache.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-npm-cache-check-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const dir = (...parts: string[]) => {
  const path = join(work, ...parts);
  mkdirSync(path, { recursive: true, mode: 0o755 });
  chmodSync(path, 0o755);
  return path;
};

const places: CachePlaces = {
  ownerUid: process.getuid?.() ?? 0,
  installCacheRoot: dir('xdg-cache', 'mcp-sandbox', 'npm'),
  stateDir: dir('state'),
  statePrefix: 'mcp-sandbox-',
  stateRoot: dir('named-state'),
  hidden: [dir('home')],
};

const reason = (path: string | undefined, at: CachePlaces = places) => {
  const check = checkUserNpmCache(path, at);
  return check.ok ? 'ok' : check.reason;
};

describe('checkUserNpmCache', () => {
  it("accepts the user's own plain cache directory (control)", () => {
    const cache = dir('home', '.npm');
    const check = checkUserNpmCache(cache, places);
    expect(check.ok && check.cache.path).toBe(cache);
  });

  it('refuses paths that are not plain and absolute', () => {
    expect(reason(undefined)).toContain('no cache');
    expect(reason('.npm')).toContain('not a plain absolute path');
    expect(reason(`${dir('home')}/../home/.npm`)).toContain('not a plain absolute path');
    expect(reason(`${dir('home')}//.npm`)).toContain('not a plain absolute path');
    // A trailing slash names the same directory.
    expect(reason(`${dir('home', '.npm')}/`)).toBe('ok');
  });

  it('refuses a missing path, a file, a symlink and a path behind a symlink', () => {
    expect(reason(join(work, 'missing'))).toContain('does not exist');
    const file = join(work, 'file');
    writeFileSync(file, '');
    expect(reason(file)).toContain('not a directory');
    const link = join(work, 'link');
    symlinkSync(dir('home', '.npm'), link);
    expect(reason(link)).toContain('is a symlink');
    const parent = join(work, 'linked-home');
    symlinkSync(dir('home'), parent);
    expect(reason(join(parent, '.npm'))).toContain('behind a symlink');
  });

  it('lends its own cache read-only to installs of another uid; refuses a third uid or one others may write', () => {
    const cache = dir('home', 'shared');
    // Root's own cache while installs write as the sandbox's uid: read-only, never writable.
    const lent = checkUserNpmCache(cache, { ...places, ownerUid: places.ownerUid + 1 });
    expect(lent.ok && lent.cache.readOnly).toBe(true);
    const own = checkUserNpmCache(cache, places);
    expect(own.ok && own.cache.readOnly).toBe(false);
    if (process.getuid?.() === 0) {
      chownSync(cache, 12345, 12345);
      expect(reason(cache, { ...places, ownerUid: 65534 })).toContain('owned by uid 12345');
      chownSync(cache, 0, 0);
    }
    chmodSync(cache, 0o777);
    expect(reason(cache)).toContain('writable by other users');
  });

  it("refuses a cache inside or around mcp-sandbox's own trees and the sandboxes' homes", () => {
    expect(reason(dir('xdg-cache', 'mcp-sandbox', 'npm', 'k'))).toContain("mcp-sandbox's install cache");
    expect(reason(dir('xdg-cache'))).toContain("mcp-sandbox's install cache");
    expect(reason(dir('state', 'mcp-sandbox-abc', 'home', '.npm'))).toContain("sandboxes' state directory");
    expect(reason(dir('named-state', 'srv', 'home', '.npm'))).toContain("servers' named state");
    // The state directory is often /tmp: a cache beside the sandboxes' homes is fine.
    expect(reason(dir('state', 'my-npm-cache'))).toBe('ok');
    // A cache that would bind the home (or a hidden root) read-write.
    expect(reason(work)).toMatch(/overlaps|contains/);
    expect(reason(dir('home'))).toContain('contains');
  });

  it('refuses a cache in a folder this session mounts read-write, or below one others may change', () => {
    const project = dir('project');
    const cache = dir('project', 'npm-cache');
    expect(reason(cache)).toBe('ok');
    expect(reason(cache, { ...places, writable: [project] })).toContain('this session');
    expect(reason(project, { ...places, writable: [cache] })).toContain('this session');
    // A folder anyone may write (no sticky bit): whoever can, can put another cache in its place.
    chmodSync(project, 0o777);
    expect(reason(cache)).toContain('which others may change');
    chmodSync(project, 0o1777);
    expect(reason(cache)).toBe('ok');
    chmodSync(project, 0o755);
  });
});
