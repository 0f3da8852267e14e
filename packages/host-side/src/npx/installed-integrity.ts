/**
 * What npm actually installed, compared with the pin before any of the package's code runs. The
 * pin holds the integrity the registry gave the host; npm may still install another tarball (a
 * cache entry planted with the real registry's ETag and revalidated by a 304, a registry that
 * answers npm differently): the fetch half of the install writes npm's own record of what it
 * extracted, `node_modules/.package-lock.json`, which is read here no-follow, bounded and parsed
 * as the install's (untrusted) output.
 */
import { PinChangedError, SandboxFailureError } from '@mcpsandbox/core';
import { type OpenDir, readFileAt } from '../host-fs.js';
import { packageNameParts } from './spec.js';

const MAX_LOCK_BYTES = 32 * 2 ** 20;
/** A hash of an integrity string; npm records old packages' sha1 beside (or instead of) sha512. */
const INTEGRITY = /^sha(?:1|256|384|512)-[A-Za-z0-9+/]{20,100}={0,2}$/;

/**
 * Refuses the install in `prefix` unless npm's record of `name@version` (the exact spec it
 * installed) has `expected` as its integrity. Throws {@link PinChangedError} naming both.
 */
export function checkInstalledIntegrity(prefix: OpenDir, spec: string, expected: string): string {
  const at = spec.lastIndexOf('@');
  const name = at > 0 ? spec.slice(0, at) : spec;
  const fail = (why: string) =>
    new SandboxFailureError(`cannot tell what npm installed for ${spec}: ${why}; refusing to start it`, {
      code: 'E_PREPARE',
    });
  if (packageNameParts(name) === undefined) throw fail('not a package name');
  let bytes: Buffer | undefined;
  try {
    bytes = readFileAt(prefix, ['node_modules', '.package-lock.json'], MAX_LOCK_BYTES);
  } catch (error) {
    throw fail((error as Error).message);
  }
  if (!bytes) throw fail('npm left no node_modules/.package-lock.json');
  let lock: unknown;
  try {
    lock = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw fail('its node_modules/.package-lock.json is not JSON');
  }
  const packages = isObject(lock) ? lock.packages : undefined;
  const entry = isObject(packages) ? packages[`node_modules/${name}`] : undefined;
  const recorded = isObject(entry) ? entry.integrity : undefined;
  if (typeof recorded !== 'string') throw fail(`no integrity recorded for ${name}`);
  const hashes = recorded.split(/\s+/).filter(Boolean);
  if (hashes.length === 0 || hashes.length > 4 || !hashes.every((hash) => INTEGRITY.test(hash))) {
    throw fail(`the integrity recorded for ${name} is not valid`);
  }
  const algorithm = expected.slice(0, expected.indexOf('-'));
  const same = hashes.find((hash) => hash.startsWith(`${algorithm}-`));
  if (same !== expected) {
    throw new PinChangedError(
      `npm installed ${spec} with integrity ${same ?? hashes.join(' ')}, but ${expected} is pinned: ` +
        'refusing to start it (the registry or an npm cache served another tarball than the one the registry named to mcp-sandbox)',
    );
  }
  return same;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
