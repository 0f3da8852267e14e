import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';

/** A lockfile larger than this is not read (a big project's is a few MB). */
const MAX_LOCKFILE = 32 * 2 ** 20;
const INTEGRITY = /^sha(256|384|512)-[A-Za-z0-9+/]+={0,2}$/;

/**
 * Whether the `mcp-sandbox` package in `<base>/node_modules/mcp-sandbox` came from a registry at
 * exactly `version`, as npm recorded it when it installed it: the install's own lockfile (npm's
 * hidden `node_modules/.package-lock.json`, else `package-lock.json`) names a registry tarball of
 * that version with its integrity. A tarball or folder installed by path, a link, a workspace or
 * anything unreadable is not from a registry, and `npx -y mcp-sandbox@<version>` would not start it.
 * The lockfiles are read as untrusted input: a regular file, not followed through a link, bounded.
 */
export function installedFromRegistry(base: string, version: string): boolean {
  for (const file of [join(base, 'node_modules', '.package-lock.json'), join(base, 'package-lock.json')]) {
    const lock = readLockfile(file);
    if (lock === undefined) continue;
    const entry = packageEntry(lock);
    // The first lockfile that records the package decides.
    if (entry !== undefined) return isRegistryEntry(entry, version);
  }
  return false;
}

function packageEntry(lock: unknown): Record<string, unknown> | undefined {
  if (!isObject(lock) || !isObject(lock.packages)) return undefined;
  const entry = Object.hasOwn(lock.packages, 'node_modules/mcp-sandbox')
    ? lock.packages['node_modules/mcp-sandbox']
    : undefined;
  return isObject(entry) ? entry : undefined;
}

function isRegistryEntry(entry: Record<string, unknown>, version: string): boolean {
  const { resolved, integrity } = entry;
  if (entry.version !== version || entry.link === true) return false;
  if (typeof integrity !== 'string' || !integrity.split(' ').every((i) => INTEGRITY.test(i))) return false;
  if (typeof resolved !== 'string') return false;
  let url: URL;
  try {
    url = new URL(resolved);
  } catch {
    return false;
  }
  // npm's tarball address for a registry package: `<registry>/mcp-sandbox/-/mcp-sandbox-<v>.tgz`.
  return (
    (url.protocol === 'https:' || url.protocol === 'http:') &&
    url.pathname.endsWith(`/mcp-sandbox/-/mcp-sandbox-${version}.tgz`)
  );
}

function readLockfile(path: string): unknown {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_LOCKFILE) return undefined;
    const bytes = Buffer.alloc(stat.size);
    let read = 0;
    while (read < stat.size) {
      const n = readSync(fd, bytes, read, stat.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return JSON.parse(bytes.subarray(0, read).toString('utf8')) as unknown;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
