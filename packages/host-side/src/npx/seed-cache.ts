/**
 * As root, installs write as the sandbox's uid and root's own npm cache is not theirs: instead of
 * lending it (it may hold private packages' tarballs, and nothing an install runs may write it),
 * the host places in the install's own cache the tarballs the registry vouches for
 * (npx/vouched.ts), each found by its sha512 alone (npm's content store names tarballs so) and
 * checked against it. A tarball root owns and no one else may write is hard-linked (checked, then
 * linked, then the link checked to be that very file); any other is copied, checked as it is
 * copied. The sandbox never sees root's cache, only these files; npm checks each tarball once
 * more as it reads it.
 *
 * The `npm ci` that reads this cache is started early, while the resolve still runs, and waits
 * (npm-gate.js) until the seeding is over: its sandbox exists while the host seeds. So the host
 * writes into the cache as if a sandbox wrote there too: directories are opened without following
 * a link, and each file is created under a temporary name (exclusively, never through a link) and
 * then linked to its own name, never replacing one. What a sandbox plants there reaches nothing
 * of the host, and a tarball npm finds missing it downloads as it would.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fchownSync,
  fstatSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs';
import type { RegistryAgent, RegistryTrust } from '@mcpsandbox/core';
import { at, closeDir, HostFsError, lstatAt, type OpenDir, openDirAt, openOwnedDir } from '../host-fs.js';
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

/** npm's content store for sha512 integrities: where every registry tarball lies. */
const STORE = ['_cacache', 'content-v2', 'sha512'];

/** Where in {@link STORE} a sha512 integrity lies: two directories and a file name. */
function contentPath(integrity: string): { readonly dirs: string[]; readonly file: string; digest: Buffer } {
  const digest = Buffer.from(integrity.slice('sha512-'.length), 'base64');
  if (digest.length !== 64) throw new HostFsError(`not a sha512 integrity: ${integrity.slice(0, 20)}`);
  const hex = digest.toString('hex');
  return { dirs: [hex.slice(0, 2), hex.slice(2, 4)], file: hex.slice(4), digest };
}

/** `dirs` below `from`, no component followed if a symlink, all on `from`'s file system. */
function openChain(from: OpenDir, dirs: readonly string[], create?: { readonly owner?: Owner }): OpenDir {
  let current = from;
  try {
    for (const name of dirs) {
      let made = false;
      if (create) {
        try {
          mkdirSync(at(current.fd, name), { mode: 0o755 });
          made = true;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
      }
      const next = openDirAt(current, name);
      if (!next) throw new HostFsError(`${name} does not exist`);
      if (current !== from) closeDir(current);
      current = next;
      if (made && create?.owner) fchownSync(current.fd, create.owner.uid, create.owner.gid);
    }
    return current;
  } catch (error) {
    if (current !== from) closeDir(current);
    throw error;
  }
}

type Owner = { readonly uid: number; readonly gid: number };

/** Places tarballs from one lent cache into one install cache; {@link Seeder.close} when done. */
export interface Seeder {
  /** The bytes placed for `tarball` (see {@link placeTarball}), or undefined. */
  place(tarball: LockedTarball, maxBytes: number): number | undefined;
  close(): void;
}

/**
 * A seeder from `lent` into `into` whose content stores are opened once, as they are first
 * needed (the one in `into` made then, given to `owner`), for all the tarballs it places.
 */
export function openSeeder(lent: OpenDir, into: OpenDir, owner?: Owner): Seeder {
  let stores: { readonly lent: OpenDir; readonly into: OpenDir } | null | undefined;
  const opened = () => {
    if (stores !== undefined) return stores;
    stores = null;
    let from: OpenDir | undefined;
    try {
      from = openChain(lent, STORE);
      stores = { lent: from, into: openChain(into, STORE, owner ? { owner } : {}) };
    } catch {
      // no store to take from, or one a sandbox made a link of: npm downloads these
      if (from) closeDir(from);
    }
    return stores;
  };
  return {
    place: (tarball, maxBytes) => {
      const both = opened();
      return both ? placeIn(both.lent, lent.stat.dev, both.into, tarball, maxBytes, owner) : undefined;
    },
    close: () => {
      if (!stores) return;
      closeDir(stores.lent);
      closeDir(stores.into);
    },
  };
}

/**
 * Places the content of `tarball` from the cache `lent` into its directory in `into` (made if
 * missing, given to `owner`, the uid npm runs as, which writes its own records there) when `lent`
 * holds it as a regular file (no symlink anywhere on the way) of at most `maxBytes`, and only
 * when its sha512 is the tarball's. The number of bytes placed, or undefined.
 */
export function placeTarball(
  lent: OpenDir,
  into: OpenDir,
  tarball: LockedTarball,
  maxBytes: number,
  owner?: Owner,
): number | undefined {
  const seeder = openSeeder(lent, into, owner);
  try {
    return seeder.place(tarball, maxBytes);
  } finally {
    seeder.close();
  }
}

function placeIn(
  lentStore: OpenDir,
  dev: number,
  intoStore: OpenDir,
  tarball: LockedTarball,
  maxBytes: number,
  owner: Owner | undefined,
): number | undefined {
  const where = contentPath(tarball.integrity);
  let source: OpenDir;
  try {
    source = openChain(lentStore, where.dirs);
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
    if (!stat.isFile() || stat.dev !== dev || stat.size > maxBytes) return undefined;
    let dest: OpenDir;
    try {
      dest = openChain(intoStore, where.dirs, owner ? { owner } : {});
    } catch {
      return undefined; // made a link (or anything else) by a sandbox: npm downloads that one
    }
    try {
      if (lendable(stat)) {
        const linked = linkVerified(input, stat, source, dest, where);
        if (linked !== 'copy') return linked;
      }
      return copyVerified(input, dest, where.file, where.digest, stat.size);
    } finally {
      closeDir(dest);
    }
  } finally {
    closeSync(input);
    closeDir(source);
  }
}

/**
 * A file the host owns that no one else may write (with an ACL, the group bits are its mask, so
 * no entry of it grants writing either): a hard link to it lends the sandbox nothing to write.
 */
function lendable(stat: Stats): boolean {
  return stat.uid === (process.getuid?.() ?? -1) && (stat.mode & 0o022) === 0;
}

/**
 * Links the lent file `input` (its content checked first) as `where.file` in `dest`, then checks
 * that the name there is that very file. `'copy'` when no link could be made (another file
 * system): the caller copies instead.
 */
function linkVerified(
  input: number,
  stat: Stats,
  source: OpenDir,
  dest: OpenDir,
  where: { readonly file: string; readonly digest: Buffer },
): number | undefined | 'copy' {
  if (!sha512Of(input, stat.size)?.equals(where.digest)) return undefined;
  try {
    linkSync(at(source.fd, where.file), at(dest.fd, where.file));
  } catch (error) {
    // there already (npm's own download): npm has what it needs
    return (error as NodeJS.ErrnoException).code === 'EEXIST' ? undefined : 'copy';
  }
  // The name linked is the file checked: not one the lent cache's name came to hold meanwhile.
  const placed = lstatAt(dest, [where.file]);
  return placed && placed.dev === stat.dev && placed.ino === stat.ino ? stat.size : undefined;
}

/** The sha512 of the `size` bytes of `input`, or undefined when it holds fewer. */
function sha512Of(input: number, size: number): Buffer | undefined {
  const hash = createHash('sha512');
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(size, 1)));
  let read = 0;
  while (read < size) {
    const n = readSync(input, buffer, 0, Math.min(buffer.length, size - read), read);
    if (n === 0) return undefined;
    hash.update(buffer.subarray(0, n));
    read += n;
  }
  return hash.digest();
}

/**
 * Copies at most `size` bytes of `input` into `dest` under a temporary name, then links it as
 * `name` unless they do not hash to `digest` or `name` exists already (npm downloaded it first).
 * Nothing existing is written, followed or replaced; the temporary name is always removed.
 */
function copyVerified(
  input: number,
  dest: OpenDir,
  name: string,
  digest: Buffer,
  size: number,
): number | undefined {
  const partial = `.${name}.seeding`;
  let output: number;
  try {
    output = openSync(at(dest.fd, partial), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o444);
  } catch {
    return undefined;
  }
  let placed = false;
  try {
    const hash = createHash('sha512');
    const buffer = Buffer.allocUnsafe(CHUNK);
    let copied = 0;
    while (copied < size) {
      const n = readSync(input, buffer, 0, Math.min(CHUNK, size - copied), copied);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
      for (let written = 0; written < n; ) written += writeSync(output, buffer, written, n - written);
      copied += n;
    }
    closeSync(output);
    output = -1;
    if (copied === size && hash.digest().equals(digest)) {
      try {
        linkSync(at(dest.fd, partial), at(dest.fd, name));
        placed = true;
      } catch {
        // there already (npm's own download), or the sandbox moved the copy: npm has what it needs
      }
    }
  } finally {
    if (output >= 0) closeSync(output);
    try {
      unlinkSync(at(dest.fd, partial));
    } catch {
      // removed by the sandbox meanwhile
    }
  }
  return placed ? size : undefined;
}

/** The install's own cache: bound read-write for npm's `ci` alone, then removed. */
export interface SeededCache {
  /** Its name in the staging directory. */
  readonly name: string;
}

/** The name of the seeded cache in an install's staging directory (never published). */
export const SEED_DIR = 'npm-seed';

/** Makes the install's own npm cache in `staging`, empty, before any sandbox sees it. */
export function makeInstallCache(staging: OpenDir, owner?: Owner): SeededCache {
  mkdirSync(at(staging.fd, SEED_DIR), { mode: 0o700 });
  const into = openDirAt(staging, SEED_DIR);
  if (!into) throw new HostFsError('the install cache vanished');
  try {
    if (owner) fchownSync(into.fd, owner.uid, owner.gid);
  } finally {
    closeDir(into);
  }
  return { name: SEED_DIR };
}

/**
 * Seeds the install's cache `cache` from the cache lent at `lentPath` with the tarballs of the
 * lock in `prefix` that `registry` vouches for, each copied as soon as the registry vouches for
 * it (see the module comment), within `limits`, until `signal` aborts. The content directories
 * are made before this returns: call it before npm may run. `lentPath` is never shown to a sandbox.
 */
export function startSeeding(
  dirs: { readonly staging: OpenDir; readonly prefix: OpenDir },
  cache: SeededCache,
  lentPath: string,
  registry: string,
  options: SeedOptions,
): Promise<SeedResult> {
  const locked = lockedTarballs(dirs.prefix);
  let into: OpenDir | undefined;
  let lent: OpenDir | undefined;
  try {
    into = openDirAt(dirs.staging, cache.name);
    lent = openOwnedDir(lentPath);
  } catch {
    // the lent cache is not the host's own (a link, writable by others): nothing to seed from
  }
  if (!into || !lent || locked.length === 0) {
    closeDir(lent);
    closeDir(into);
    void options.agent?.then((agent) => agent?.close());
    return Promise.resolve({ seeded: [], bytes: 0 });
  }
  const target = into;
  return copyVouched(target, lent, locked, registry, options).finally(() => {
    closeDir(lent);
    closeDir(target);
  });
}

/** How startSeeding seeds. */
export interface SeedOptions {
  readonly trust: RegistryTrust;
  readonly limits: SeedLimits;
  readonly owner?: Owner;
  readonly signal?: AbortSignal;
  /** Connections to the registry opened ahead (see warmRegistryAgent); closed in any case. */
  readonly agent?: Promise<RegistryAgent | undefined>;
}

async function copyVouched(
  into: OpenDir,
  lent: OpenDir,
  locked: readonly LockedTarball[],
  registry: string,
  options: SeedOptions,
): Promise<SeedResult> {
  const seeded: LockedTarball[] = [];
  let bytes = 0;
  const seeder = openSeeder(lent, into, options.owner);
  try {
    await vouchedByRegistry(registry, locked, {
      trust: options.trust,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
      onVouched: (tarball) => {
        const room = Math.min(options.limits.fileBytes, options.limits.totalBytes - bytes);
        const placed = room > 0 ? seeder.place(tarball, room) : undefined;
        if (placed === undefined) return;
        seeded.push(tarball);
        bytes += placed;
      },
    });
  } finally {
    seeder.close();
  }
  return { seeded, bytes };
}
