/**
 * File operations the host performs on trees the sandbox could have written (the install staging
 * directory, the sandbox's private home, state directories of earlier sessions).
 *
 * Node 20 has no `openat`, `fchownat` or `unlinkat` (fd-paths.ts says how entries are named on
 * Linux and, without /proc, on macOS). Linux gives the same guarantee through
 * `/proc/self/fd/<fd>/<name>`: the kernel resolves `/proc/self/fd/<fd>` to the very directory
 * the descriptor holds (a "magic link", never re-walked by name), so only `<name>` is looked up,
 * inside that directory. With `O_NOFOLLOW` on that last component, a symlink planted anywhere in
 * the tree is refused instead of followed; with `O_PATH` the host can look at (`fstat`) and then
 * chmod or chown the exact inode it checked, through `/proc/self/fd/<its fd>`, without opening it.
 * A hard link out of the tree cannot exist: the sandbox sees its tree through a bind mount, and
 * `link()` across mounts fails (`EXDEV`); every entry is also checked to be on the tree's device.
 *
 * Every entry point starts from a directory the host created itself (and checked with `fstat`),
 * and every later step is relative to a descriptor. Names are single path components.
 */

import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync as closeFd,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  opendirSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  rmdirSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs';
import {
  dirPath,
  entryPath,
  fdPathStrategy,
  forgetFd,
  HostFsError,
  rememberDir,
  rememberDirAt,
  rememberEntry,
} from './fd-paths.js';

export { HostFsError };

/** Counts each entry a walk meets and throws past its limit (tree-usage.ts's TreeCounter). */
export interface EntryCounter {
  add(stat: {
    readonly size: number;
    readonly nlink?: number;
    readonly ino?: number;
    readonly dev?: number;
  }): void;
}

/** `O_PATH` (not in Node's constants): the same value on x86_64, arm64 and riscv64, the arches we support. */
const O_PATH = 0o10000000;
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;

/** A deeper tree than any real install: the walk refuses it rather than recurse without bound. */
const MAX_DEPTH = 200;

/** Entry `name` of the directory `dirFd` holds (`/proc/self/fd/<fd>/<name>` on Linux), `name` one component. */
export function at(dirFd: number, name: string): string {
  return entryPath(dirFd, name);
}

function self(fd: number): string {
  return dirPath(fd);
}

/** Closes a descriptor (or drops a portable entry handle, which is none) and forgets its path. */
function close(fd: number): void {
  forgetFd(fd);
  if (fd >= 0) closeFd(fd);
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Each name in the directory `dirFd` holds, read a batch at a time (never the whole listing at
 * once: a directory of millions of entries costs no more memory than a small one); stops when
 * `use` throws.
 */
export function eachName(dirFd: number, use: (name: string) => void): void {
  const dir = opendirSync(self(dirFd), { bufferSize: 256 });
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) use(entry.name);
  } finally {
    dir.closeSync();
  }
}

/** A directory the host holds open, with what `fstat` said of it when it was opened. */
export interface OpenDir {
  readonly fd: number;
  readonly stat: Stats;
}

/**
 * Opens a directory the host owns (its own config: the state dir, the cache root), refusing a
 * symlink as the last component, and checks it: a directory, owned by this process's user, and
 * writable by no one else, so that nothing but the host can change its entries.
 */
export function openOwnedDir(path: string): OpenDir {
  let fd: number;
  try {
    fd = openSync(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    throw new HostFsError(`cannot open ${path} (it must be a directory, not a symlink)`, error);
  }
  const stat = fstatSync(fd);
  const uid = process.getuid?.() ?? 0;
  if (stat.uid !== uid || (stat.mode & 0o022) !== 0) {
    close(fd);
    throw new HostFsError(
      `${path} must be owned by uid ${uid} and writable by nobody else (mode ${(stat.mode & 0o7777).toString(8)}, owner ${stat.uid}); fix its owner and mode or choose another directory`,
    );
  }
  try {
    // The host's own path: its links above (macOS's /var → /private/var) resolved once, here.
    if (fdPathStrategy() === 'portable') rememberDir(fd, realpathSync(path));
  } catch (error) {
    close(fd);
    throw error;
  }
  return { fd, stat };
}

/** Opens `name` in `dir` as a directory, never through a symlink. Undefined when it does not exist. */
export function openDirAt(dir: OpenDir, name: string): OpenDir | undefined {
  const path = at(dir.fd, name);
  let fd: number;
  try {
    fd = openSync(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    throw new HostFsError(`cannot open ${name} as a directory (symlinks are refused)`, error);
  }
  const stat = fstatSync(fd);
  if (stat.dev !== dir.stat.dev) {
    close(fd);
    throw new HostFsError(`${name} is on another file system`);
  }
  try {
    rememberDirAt(fd, dir.fd, name);
  } catch (error) {
    close(fd);
    throw error;
  }
  return { fd, stat };
}

export function closeDir(dir: OpenDir | undefined): void {
  if (dir) close(dir.fd);
}

/** Walks `parts` from `dir`, no component followed if it is a symlink; closes what it opened. */
function walk<T>(dir: OpenDir, parts: readonly string[], use: (last: OpenDir) => T): T | undefined {
  let current = dir;
  const opened: OpenDir[] = [];
  try {
    for (const part of parts) {
      const next = openDirAt(current, part);
      if (!next) return undefined;
      opened.push(next);
      current = next;
    }
    return use(current);
  } finally {
    for (const entry of opened) closeDir(entry);
  }
}

/**
 * Reads `dirs/…/name` below `dir`: no symlink anywhere, a regular file on the same file system,
 * at most `maxBytes`. Undefined when a component does not exist.
 */
export function readFileAt(dir: OpenDir, path: readonly string[], maxBytes: number): Buffer | undefined {
  const name = path[path.length - 1];
  if (name === undefined) throw new HostFsError('empty path');
  return walk(dir, path.slice(0, -1), (parent) => {
    const file = at(parent.fd, name);
    let fd: number;
    try {
      // O_NONBLOCK: a FIFO planted in place of the file must not hang the host.
      fd = openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (error) {
      if (errno(error) === 'ENOENT') return undefined;
      throw new HostFsError(`cannot open ${path.join('/')} (symlinks are refused)`, error);
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile() || stat.dev !== dir.stat.dev) {
        throw new HostFsError(`${path.join('/')} is not a regular file of the tree`);
      }
      if (stat.size > maxBytes) throw new HostFsError(`${path.join('/')} is larger than ${maxBytes} bytes`);
      const buffer = Buffer.alloc(stat.size);
      let filled = 0;
      while (filled < buffer.length) {
        const n = readSync(fd, buffer, filled, buffer.length - filled, filled);
        if (n === 0) break;
        filled += n;
      }
      return buffer.subarray(0, filled);
    } finally {
      close(fd);
    }
  });
}

/** What `lstat` says of `dirs/…/name` below `dir`, no directory on the way followed. */
export function lstatAt(dir: OpenDir, path: readonly string[]): Stats | undefined {
  const name = path[path.length - 1];
  if (name === undefined) throw new HostFsError('empty path');
  return walk(dir, path.slice(0, -1), (parent) => {
    const file = at(parent.fd, name);
    if (fdPathStrategy() === 'portable') return lstatOrNone(file, path.join('/'));
    let fd: number;
    try {
      fd = openSync(file, O_PATH | O_NOFOLLOW);
    } catch (error) {
      if (errno(error) === 'ENOENT') return undefined;
      throw new HostFsError(`cannot look at ${path.join('/')}`, error);
    }
    try {
      return fstatSync(fd);
    } finally {
      close(fd);
    }
  });
}

/**
 * Creates `name` in `dir` (a directory only the host can write) with `data`, atomically: a new
 * file opened with `O_CREAT | O_EXCL | O_NOFOLLOW`, synced, then renamed within `dir`. A file that
 * lives only as long as its session passes `durable: false`: it skips the sync, which costs a
 * start milliseconds on every file and buys nothing once the session is gone.
 */
export function writeFileAt(
  dir: OpenDir,
  name: string,
  data: string | Uint8Array,
  mode = 0o644,
  options: { readonly durable?: boolean } = {},
): void {
  const temporary = `.${name}.${randomBytes(6).toString('hex')}`;
  const fd = openSync(at(dir.fd, temporary), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written);
    fchmodSync(fd, mode);
    if (options.durable !== false) fsyncSync(fd);
  } finally {
    close(fd);
  }
  renameSync(at(dir.fd, temporary), at(dir.fd, name));
}

/** Renames `from` to `to`, both entries of `dir` (a directory only the host can write). */
export function renameAt(dir: OpenDir, from: string, to: string): void {
  renameSync(at(dir.fd, from), at(dir.fd, to));
}

/** `lstat`, or undefined when there is nothing there. */
function lstatOrNone(path: string, label: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    throw new HostFsError(`cannot look at ${label}`, error);
  }
}

/**
 * Opens an entry with O_PATH (no follow, no open of the file itself) and says what it is.
 * Portable (no O_PATH): `lstat`, and a handle that stands for the entry until it is closed.
 */
function lookAt(dirFd: number, name: string): { fd: number; stat: Stats } | undefined {
  const path = at(dirFd, name);
  if (fdPathStrategy() === 'portable') {
    const stat = lstatOrNone(path, name);
    return stat ? { fd: rememberEntry(path, stat), stat } : undefined;
  }
  let fd: number;
  try {
    fd = openSync(path, O_PATH | O_NOFOLLOW);
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    throw new HostFsError(`cannot look at ${name}`, error);
  }
  return { fd, stat: fstatSync(fd) };
}

/** Reopens an O_PATH directory descriptor (portable: an entry handle) for reading: the same inode. */
function reopenDir(pathFd: number): number {
  if (fdPathStrategy() === 'proc') return openSync(self(pathFd), O_RDONLY | O_DIRECTORY);
  const path = self(pathFd);
  const fd = openSync(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    rememberDir(fd, path);
  } catch (error) {
    close(fd);
    throw error;
  }
  return fd;
}

export interface SealOptions {
  /** The uid the sandbox wrote the tree as; any other owner (but `toUid`) fails closed. */
  readonly fromUid: number;
  /** New owner, when the host takes the tree over (the sandbox ran as another uid). */
  readonly to?: { readonly uid: number; readonly gid: number };
  /** Counts every entry below the top: the seal refuses (throws) at the first past its limit. */
  readonly counter?: EntryCounter;
}

/**
 * Makes a tree the sandbox wrote unchangeable by it: owned by the host (when `to` is given),
 * without setuid/setgid bits and without group or other write permission. Symlinks are left as
 * they are (never followed; a symlink cannot be changed in place). Anything on another file
 * system, or owned by a third uid, fails closed. With a counter the work is bounded: the seal
 * stops at the first entry past the counter's limit, however much the tree holds.
 */
export function sealTree(dir: OpenDir, options: SealOptions): void {
  // Fresh: the root's owner and mode changed since it was opened (it was handed to the sandbox).
  sealInode(dir.fd, fstatSync(dir.fd), options);
  sealEntries(dir.fd, dir.stat.dev, options, 0);
}

function sealInode(fd: number, stat: Stats, options: SealOptions): void {
  if (stat.uid !== options.fromUid && stat.uid !== options.to?.uid) {
    throw new HostFsError(`the install left a file owned by uid ${stat.uid}`);
  }
  // chown through the magic link reaches the inode we fstat'ed, never a name that changed since.
  if (options.to && stat.uid !== options.to.uid) chownSync(self(fd), options.to.uid, options.to.gid);
  const mode = stat.mode & 0o7777;
  const sealed = mode & ~0o6022;
  if (sealed !== mode || options.to) chmodSync(self(fd), sealed);
}

function sealEntries(dirFd: number, dev: number, options: SealOptions, depth: number): void {
  if (depth > MAX_DEPTH) throw new HostFsError('the install left a tree deeper than any real package');
  eachName(dirFd, (name) => {
    const entry = lookAt(dirFd, name);
    if (!entry) return;
    try {
      options.counter?.add(entry.stat);
      if (entry.stat.isSymbolicLink()) return;
      if (entry.stat.dev !== dev) throw new HostFsError(`${name} is on another file system`);
      sealInode(entry.fd, entry.stat, options);
      if (entry.stat.isDirectory()) {
        const child = reopenDir(entry.fd);
        try {
          sealEntries(child, dev, options, depth + 1);
        } finally {
          close(child);
        }
      }
    } finally {
      close(entry.fd);
    }
  });
}

/**
 * Removes `name` from `dir` and everything below it, whatever the sandbox made of it: symlinks,
 * FIFOs and devices are unlinked, never followed or opened; a directory locked with chmod 000 is
 * reopened by inode and made writable first; nothing on another file system is entered. There is
 * no depth limit (see `emptyDirectory`). `last` (a marker that lets a later start sweep what is
 * left) is removed after everything else below `name`, so a removal that fails keeps it.
 */
export function removeAt(
  dir: OpenDir | number,
  name: string,
  expect?: { readonly dev: number; readonly ino: number },
  options: { readonly last?: string } = {},
): void {
  const dirFd = typeof dir === 'number' ? dir : dir.fd;
  const entry = lookAt(dirFd, name);
  if (!entry) return;
  try {
    if (expect && (entry.stat.dev !== expect.dev || entry.stat.ino !== expect.ino)) {
      throw new HostFsError(`${name} is no longer the directory the host created`);
    }
    if (entry.stat.isDirectory()) {
      emptyDirectory(entry.fd, entry.stat, options.last);
      rmdirSync(at(dirFd, name));
    } else {
      unlinkSync(at(dirFd, name));
    }
  } finally {
    close(entry.fd);
  }
}

/** {@link removeAt} of `dirs/…/name` below `dir`, never through a symlink; nothing when absent. */
export function removeBelow(dir: OpenDir, path: readonly string[]): void {
  const name = path[path.length - 1];
  if (name === undefined) throw new HostFsError('empty path');
  walk(dir, path.slice(0, -1), (parent) => removeAt(parent, name));
}

/**
 * {@link removeBelow} from the directory at `root`, which must be the host's own (see
 * {@link openOwnedDir}). Best effort: what cannot be removed stays (another start may be removing
 * it too), and is removed with what holds it.
 */
export function removeBelowOwned(root: string, path: readonly string[]): void {
  let dir: OpenDir | undefined;
  try {
    dir = openOwnedDir(root);
    removeBelow(dir, path);
  } catch {
    // left where it is
  } finally {
    closeDir(dir);
  }
}

/** Gives the host back its permissions on a directory the sandbox (same uid) locked. */
function unlock(pathFd: number, stat: Stats): void {
  if ((stat.mode & 0o700) === 0o700) return;
  try {
    chmodSync(self(pathFd), 0o700);
  } catch {
    // not ours to change: reading it below fails and says so
  }
}

/**
 * Empties the directory `topPathFd` holds without recursion, so that no depth (a chain of
 * directories deeper than PATH_MAX, or than any stack) stops it: in each pass, files directly in
 * it are unlinked and each subdirectory is emptied one level only (its files unlinked, its own
 * subdirectories renamed up into the top) and removed. Each pass takes a level off the tree; at
 * most three descriptors are open at a time, and no path longer than one name is ever built.
 * The top is the host's own directory (a session's, a staging or a doomed state directory),
 * which no sandbox sees, so the host alone chooses the names it renames to.
 */
function emptyDirectory(topPathFd: number, stat: Stats, last: string | undefined): void {
  unlock(topPathFd, stat);
  const top = reopenDir(topPathFd);
  let serial = 0;
  const freshName = (): string => {
    for (;;) {
      const name = `.mcp-sandbox-removing-${serial++}`;
      const taken = lookAt(top, name);
      if (!taken) return name;
      close(taken.fd);
    }
  };
  try {
    for (;;) {
      const names = readdirSync(self(top)).filter((name) => name !== last);
      if (names.length === 0) break;
      for (const name of names) removeOneLevel(top, name, stat.dev, freshName);
    }
    if (last !== undefined) {
      const marker = lookAt(top, last);
      if (marker) {
        close(marker.fd);
        if (marker.stat.isDirectory()) removeOneLevel(top, last, stat.dev, freshName);
        else unlinkSync(at(top, last));
      }
    }
  } finally {
    close(top);
  }
}

/** Removes `name` from `top`: a file at once; a directory after moving its subdirectories up. */
function removeOneLevel(top: number, name: string, dev: number, freshName: () => string): void {
  const entry = lookAt(top, name);
  if (!entry) return;
  try {
    if (!entry.stat.isDirectory()) {
      unlinkSync(at(top, name));
      return;
    }
    // A mount point: never entered, never moved; rmdir fails if something is mounted there.
    if (entry.stat.dev === dev) {
      unlock(entry.fd, entry.stat);
      const dir = reopenDir(entry.fd);
      try {
        for (const child of readdirSync(self(dir))) {
          const found = lookAt(dir, child);
          if (!found) continue;
          close(found.fd);
          if (found.stat.isDirectory() && found.stat.dev === dev) {
            renameSync(at(dir, child), at(top, freshName()));
          } else if (found.stat.isDirectory()) {
            rmdirSync(at(dir, child));
          } else {
            unlinkSync(at(dir, child));
          }
        }
      } finally {
        close(dir);
      }
    }
    rmdirSync(at(top, name));
  } finally {
    close(entry.fd);
  }
}
