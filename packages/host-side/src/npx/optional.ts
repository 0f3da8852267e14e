import { HostFsError, type OpenDir, readFileAt, removeBelow } from '../host-fs.js';
import { PACKAGE_NAME } from './spec.js';

/** The most of npm's lock the host reads (a lock of tens of thousands of packages fits). */
const LOCK_BYTES = 64 * 1024 * 1024;
/** The most optional dependencies skipped in one install: each skip runs the scripts again. */
export const MAX_SKIPPED = 16;

/**
 * The packages npm installed as optional only, by lock key (`node_modules/a/node_modules/b`): its
 * lock marks them `"optional": true` when only optionalDependencies reach them, and npm skips such
 * a package when its build fails. Read right after the fetch, which runs no package code (the lock
 * is npm's own output); a lock that is missing or does not parse gives none: every build required.
 */
export function optionalPackages(prefix: OpenDir): ReadonlySet<string> {
  const found = new Set<string>();
  let lock: unknown;
  try {
    const text = readFileAt(prefix, ['package-lock.json'], LOCK_BYTES);
    if (!text) return found;
    lock = JSON.parse(text.toString('utf8'));
  } catch (error) {
    if (error instanceof HostFsError || error instanceof SyntaxError) return found;
    throw error;
  }
  const packages = isRecord(lock) ? lock.packages : undefined;
  if (!isRecord(packages)) return found;
  for (const [key, value] of Object.entries(packages)) {
    if (isRecord(value) && value.optional === true && lockKeyParts(key)) found.add(key);
  }
  return found;
}

/**
 * Whether any package npm installed has a build to run (`hasInstallScript` in npm's record of
 * what it extracted, node_modules/.package-lock.json: install scripts or a binding.gyp). None:
 * the scripts step has nothing to do (the fetch linked the bins), and is not started. A record
 * that is missing or does not parse says yes.
 */
export function hasInstallScripts(prefix: OpenDir): boolean {
  let lock: unknown;
  try {
    const text = readFileAt(prefix, ['node_modules', '.package-lock.json'], LOCK_BYTES);
    if (!text) return true;
    lock = JSON.parse(text.toString('utf8'));
  } catch (error) {
    if (error instanceof HostFsError || error instanceof SyntaxError) return true;
    throw error;
  }
  const packages = isRecord(lock) ? lock.packages : undefined;
  if (!isRecord(packages)) return true;
  return Object.values(packages).some(
    (value) => !isRecord(value) || (value.hasInstallScript !== false && value.hasInstallScript !== undefined),
  );
}

/**
 * Removes an optional package whose build failed, as npm's own install does, through no-follow
 * opens below the prefix the host created. Returns its name when it is one to show.
 */
export function dropOptional(prefix: OpenDir, key: string): string | undefined {
  const parts = lockKeyParts(key);
  if (!parts) return undefined;
  removeBelow(prefix, parts);
  const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
  return PACKAGE_NAME.test(name) ? name : undefined;
}

/**
 * A lock key as path components: `node_modules/` then a name (scoped: two components), repeated;
 * never `.`, `..` or an empty component. Undefined for anything else.
 */
function lockKeyParts(key: string): string[] | undefined {
  if (key.length > 4096) return undefined;
  const parts = key.split('/');
  let at = 0;
  while (at < parts.length) {
    if (parts[at] !== 'node_modules') return undefined;
    const scoped = parts[at + 1]?.startsWith('@') === true;
    const name = parts.slice(at + 1, at + (scoped ? 3 : 2));
    if (
      name.length !== (scoped ? 2 : 1) ||
      name.some((p) => !/^[^/\0]+$/.test(p) || p === '.' || p === '..')
    ) {
      return undefined;
    }
    at += scoped ? 3 : 2;
  }
  return parts.length > 0 ? parts : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
