/**
 * As root, installs write as the sandbox's uid and root's own npm cache is not theirs: instead of
 * lending it (it may hold private packages' tarballs, and nothing an install runs may write it),
 * the host copies into the install's own cache the tarballs the registry vouches for
 * (npx/vouched.ts), each found by its sha512 alone (npm's content store names tarballs so) and
 * checked against it as it is copied. The sandbox never sees root's cache; npm checks each tarball
 * once more as it reads it.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fchownSync,
  fstatSync,
  mkdirSync,
  openSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import type { RegistryTrust } from '@mcpsandbox/core';
import { at, closeDir, HostFsError, type OpenDir, openDirAt, openOwnedDir } from '../host-fs.js';
import { type LockedTarball, lockedTarballs, vouchedByRegistry } from './vouched.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
const CHUNK = 1 << 20;

export interface SeedLimits {
  /** One tarball, and all of them together. */
  readonly fileBytes: number;
  readonly totalBytes: number;
}

export interface SeedResult {
  /** The tarballs now in the install's cache, each checked against its integrity. */
  readonly seeded: readonly LockedTarball[];
  readonly bytes: number;
}

/** Where npm's content store keeps a sha512 integrity: five directories and a file name. */
function contentPath(integrity: string): { readonly dirs: string[]; readonly file: string; digest: Buffer } {
  const digest = Buffer.from(integrity.slice('sha512-'.length), 'base64');
  if (digest.length !== 64) throw new HostFsError(`not a sha512 integrity: ${integrity.slice(0, 20)}`);
  const hex = digest.toString('hex');
  return {
    dirs: ['_cacache', 'content-v2', 'sha512', hex.slice(0, 2), hex.slice(2, 4)],
    file: hex.slice(4),
    digest,
  };
}

/** `dirs` below `from`, no component followed if a symlink, all on `from`'s file system. */
function openChain(from: OpenDir, dirs: readonly string[], create?: { readonly owner?: Owner }): OpenDir {
  let current = from;
  try {
    for (const name of dirs) {
      if (create) {
        try {
          mkdirSync(at(current.fd, name), { mode: 0o755 });
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
      }
      const next = openDirAt(current, name);
      if (!next) throw new HostFsError(`${name} does not exist`);
      if (current !== from) closeDir(current);
      current = next;
      if (create?.owner) fchownSync(current.fd, create.owner.uid, create.owner.gid);
    }
    return current;
  } catch (error) {
    if (current !== from) closeDir(current);
    throw error;
  }
}

type Owner = { readonly uid: number; readonly gid: number };

/**
 * Copies the content of `tarball` from the cache `lent` into `into` when `lent` holds it as a
 * regular file (no symlink anywhere on the way) of at most `maxBytes`, and keeps the copy only
 * when its sha512 is the tarball's. The number of bytes copied, or undefined.
 */
function copyOne(
  lent: OpenDir,
  into: OpenDir,
  tarball: LockedTarball,
  maxBytes: number,
  owner: Owner | undefined,
): number | undefined {
  const where = contentPath(tarball.integrity);
  let source: OpenDir;
  try {
    source = openChain(lent, where.dirs);
  } catch {
    return undefined;
  }
  let input: number;
  try {
    // O_NONBLOCK: a FIFO in the cache must not hang the host (it is refused below).
    input = openSync(at(source.fd, where.file), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch {
    closeDir(source);
    return undefined;
  }
  try {
    const stat = fstatSync(input);
    if (!stat.isFile() || stat.dev !== lent.stat.dev || stat.size > maxBytes) return undefined;
    const dest = openChain(into, where.dirs, { ...(owner ? { owner } : {}) });
    try {
      return copyVerified(input, dest, where.file, where.digest, stat.size);
    } finally {
      closeDir(dest);
    }
  } finally {
    closeSync(input);
    closeDir(source);
  }
}

/** Copies at most `size` bytes of `input` to a new file `name` in `dest`; removed unless they hash to `digest`. */
function copyVerified(
  input: number,
  dest: OpenDir,
  name: string,
  digest: Buffer,
  size: number,
): number | undefined {
  let output: number;
  try {
    output = openSync(at(dest.fd, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o444);
  } catch {
    return undefined;
  }
  const hash = createHash('sha512');
  const buffer = Buffer.allocUnsafe(CHUNK);
  let copied = 0;
  let kept = false;
  try {
    while (copied < size) {
      const n = readSync(input, buffer, 0, Math.min(CHUNK, size - copied), copied);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
      for (let written = 0; written < n; ) written += writeSync(output, buffer, written, n - written);
      copied += n;
    }
    kept = copied === size && hash.digest().equals(digest);
  } finally {
    closeSync(output);
    if (!kept) unlinkSync(at(dest.fd, name));
  }
  return kept ? copied : undefined;
}

/**
 * Copies each of `tarballs` that `lent` holds into the npm cache `into` (a directory the host
 * created, that no sandbox has seen yet), within `limits`; directories it makes are given to
 * `owner` (the uid npm runs as, which writes its own records there), the tarballs stay the host's
 * and read-only. What is missing, refused or does not match is left for npm to download.
 */
export function seedFromCache(
  lent: OpenDir,
  into: OpenDir,
  tarballs: readonly LockedTarball[],
  limits: SeedLimits,
  owner?: Owner,
): SeedResult {
  const seeded: LockedTarball[] = [];
  let bytes = 0;
  for (const tarball of tarballs) {
    const room = Math.min(limits.fileBytes, limits.totalBytes - bytes);
    if (room <= 0) break;
    const copied = copyOne(lent, into, tarball, room, owner);
    if (copied === undefined) continue;
    seeded.push(tarball);
    bytes += copied;
  }
  return { seeded, bytes };
}

/** The install's own cache, seeded: bound read-write for npm's `ci` alone, then removed. */
export interface SeededCache {
  /** Its name in the staging directory. */
  readonly name: string;
  readonly result: SeedResult;
}

/** The name of the seeded cache in an install's staging directory (never published). */
export const SEED_DIR = 'npm-seed';

/**
 * Makes the install's own npm cache in `staging` and seeds it from the cache lent at `lentPath`
 * with the tarballs of the lock in `prefix` that `registry` vouches for (see the module comment).
 * The sandbox sees the new cache only once this returns; `lentPath` never.
 */
export async function seedInstallCache(
  dirs: { readonly staging: OpenDir; readonly prefix: OpenDir },
  lentPath: string,
  registry: string,
  options: { readonly trust: RegistryTrust; readonly limits: SeedLimits; readonly owner?: Owner },
): Promise<SeededCache> {
  const locked = lockedTarballs(dirs.prefix);
  const vouched =
    locked.length > 0 ? await vouchedByRegistry(registry, locked, { trust: options.trust }) : [];
  mkdirSync(at(dirs.staging.fd, SEED_DIR), { mode: 0o700 });
  const into = openDirAt(dirs.staging, SEED_DIR);
  if (!into) throw new HostFsError('the install cache vanished');
  try {
    if (options.owner) fchownSync(into.fd, options.owner.uid, options.owner.gid);
    let lent: OpenDir;
    try {
      lent = openOwnedDir(lentPath);
    } catch {
      return { name: SEED_DIR, result: { seeded: [], bytes: 0 } };
    }
    try {
      return { name: SEED_DIR, result: seedFromCache(lent, into, vouched, options.limits, options.owner) };
    } finally {
      closeDir(lent);
    }
  } finally {
    closeDir(into);
  }
}
