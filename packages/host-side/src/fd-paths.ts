/**
 * How the host names "entry `name` of the directory it holds open as `fd`" without `openat`
 * (Node has none).
 *
 * - `proc` (Linux): `/proc/self/fd/<fd>/<name>`. The kernel resolves `/proc/self/fd/<fd>` to the
 *   very directory the descriptor holds, so only `<name>` is looked up by name.
 * - `portable` (macOS, which has no /proc): the absolute path the host opened the directory by,
 *   checked on every use: `lstat` of that path must be the same inode (`dev`/`ino`) as `fstat` of
 *   the descriptor, a directory, and the path must have no symlink in it (`realpath` of it is
 *   itself). A directory renamed away, swapped for a link, or a link planted above it fails closed
 *   with `E_HOST_FS`. A swap between the check and the use is not seen here; on macOS the sandbox
 *   cannot make one while the host walks: the trees walked are out of the profile's writable paths
 *   by then (sessions ended, installs renamed), and Seatbelt checks paths at each access.
 *
 * The strategy is chosen by capability (does /proc/self/fd exist), once; tests force either.
 */

import { existsSync, fstatSync, lstatSync, realpathSync } from 'node:fs';
import { SandboxFailureError } from '@mcpsandbox/core';

export class HostFsError extends SandboxFailureError {
  constructor(message: string, cause?: unknown) {
    super(message, { code: 'E_HOST_FS', ...(cause === undefined ? {} : { cause }) });
    this.name = 'HostFsError';
  }
}

export type FdPathStrategy = 'proc' | 'portable';

let strategy: FdPathStrategy | undefined;

/** The strategy in use: `proc` where /proc/self/fd exists, else `portable`. */
export function fdPathStrategy(): FdPathStrategy {
  strategy ??= existsSync('/proc/self/fd') ? 'proc' : 'portable';
  return strategy;
}

/** Forces a strategy (tests run the portable one on Linux too). Returns the previous one. */
export function useFdPathStrategy(next: FdPathStrategy): FdPathStrategy {
  const previous = fdPathStrategy();
  strategy = next;
  return previous;
}

interface Known {
  readonly path: string;
  /** For an entry looked at, never opened: the identity `lstat` gave it then. */
  readonly id?: { readonly dev: number; readonly ino: number };
}

/** Portable only: the path each directory descriptor (or looked-at entry handle) was opened by. */
const known = new Map<number, Known>();
let nextHandle = -1;

function same(a: { dev: number; ino: number }, b: { dev: number; ino: number }): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** No link anywhere in `path`: what it resolves to is itself. */
function plain(path: string): boolean {
  try {
    return realpathSync(path) === path;
  } catch {
    return false;
  }
}

/**
 * Portable: records that `fd` holds the directory at `path` (absolute, no links), after checking
 * that it does. Proc: nothing to record.
 */
export function rememberDir(fd: number, path: string): void {
  if (fdPathStrategy() === 'proc') return;
  known.set(fd, { path });
  verified(fd);
}

/** Portable: a handle (a negative number, never a descriptor) for an entry seen by `lstat`. */
export function rememberEntry(path: string, id: { dev: number; ino: number }): number {
  const handle = nextHandle--;
  known.set(handle, { path, id });
  return handle;
}

/** Forgets what was recorded for `fd` (call when it is closed: numbers are reused). */
export function forgetFd(fd: number): void {
  known.delete(fd);
}

function verified(fd: number): string {
  const entry = known.get(fd);
  if (!entry) throw new HostFsError(`descriptor ${fd} was not opened through the host's no-follow helpers`);
  let now: { dev: number; ino: number; isDirectory(): boolean; isSymbolicLink(): boolean };
  try {
    now = lstatSync(entry.path);
  } catch (error) {
    throw new HostFsError(`${entry.path} changed under the host (it is gone)`, error);
  }
  const expected = entry.id ?? fstatSync(fd);
  const shape = entry.id ? !now.isSymbolicLink() : now.isDirectory();
  const parent = entry.path.slice(0, entry.path.lastIndexOf('/')) || '/';
  if (!shape || !same(now, expected) || !plain(entry.id ? parent : entry.path)) {
    throw new HostFsError(`${entry.path} changed under the host (renamed, or a link on the way)`);
  }
  return entry.path;
}

/** The path that names the directory `fd` holds (or the entry a handle stands for), checked. */
export function dirPath(fd: number): string {
  if (fdPathStrategy() === 'proc') return `/proc/self/fd/${fd}`;
  return verified(fd);
}

/** `<the directory fd holds>/<name>`, after checking that `name` is one plain path component. */
export function entryPath(dirFd: number, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new HostFsError(`refusing the path component ${JSON.stringify(name)}`);
  }
  const dir = dirPath(dirFd);
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/** Portable: after opening `name` of `dirFd` as a directory, records where it is. */
export function rememberDirAt(fd: number, dirFd: number, name: string): void {
  if (fdPathStrategy() === 'proc') return;
  rememberDir(fd, entryPath(dirFd, name));
}
