/**
 * How much a tree the sandbox writes holds (files and bytes), counted by the host while the
 * sandbox may still be writing it, and never past a limit: the walk stops at the first entry over
 * it, so its work is bounded by the limit, not by what the sandbox made. Every step is relative to
 * a directory descriptor, no symlink is followed, nothing on another file system is entered, and
 * no file is opened (lstat only: a FIFO cannot hang it). Directories are read a batch of names at
 * a time, so one directory with millions of entries costs no more memory than a small one.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, type Stats } from 'node:fs';
import { forgetFd, rememberDirAt } from './fd-paths.js';
import { at, eachName, type OpenDir } from './host-fs.js';

export interface TreeLimit {
  readonly files: number;
  readonly bytes: number;
}

/** Which limit a tree went past; or a tree the walk refuses to count (fails closed). */
export type TreeOver = 'files' | 'bytes' | 'depth' | 'unreadable';

/** A deeper tree than any real install (the seal's limit too). */
export const MAX_TREE_DEPTH = 200;

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

/**
 * Counts entries and their apparent size (a sparse file counts at its full length: copied, it
 * may become that large); a file with several links, its bytes once (an install that links its
 * files out of its own cache uses the disk once). Throws what `over` returns at the first entry
 * past the limit.
 */
export class TreeCounter {
  files = 0;
  bytes = 0;
  /** Inodes with more than one link already counted: at most one per entry counted. */
  readonly #linked = new Set<string>();

  constructor(
    readonly limit: TreeLimit,
    private readonly over: (what: TreeOver) => Error,
  ) {}

  add(stat: Pick<Stats, 'size'> & Partial<Pick<Stats, 'nlink' | 'ino' | 'dev'>>): void {
    this.files += 1;
    const { nlink, ino, dev } = stat;
    const again = nlink !== undefined && nlink > 1 && ino !== undefined && dev !== undefined;
    const key = again ? `${dev}:${ino}` : '';
    if (!again || !this.#linked.has(key)) this.bytes += stat.size;
    if (again) this.#linked.add(key);
    if (this.files > this.limit.files) throw this.over('files');
    if (this.bytes > this.limit.bytes) throw this.over('bytes');
  }

  refuse(what: TreeOver): never {
    throw this.over(what);
  }
}

class Stop extends Error {
  constructor(readonly what: TreeOver) {
    super(what);
  }
}

/**
 * What `dir` holds now, below it (the directory itself not counted), or which limit it went
 * past. Entries that vanish while it walks are skipped; a directory it cannot read, or a tree
 * deeper than {@link MAX_TREE_DEPTH}, is refused.
 */
export function measureTree(dir: OpenDir, limit: TreeLimit): { files: number; bytes: number } | TreeOver {
  const counter = new TreeCounter(limit, (what) => new Stop(what));
  try {
    walk(dir.fd, dir.stat.dev, counter, 0);
  } catch (error) {
    if (error instanceof Stop) return error.what;
    throw error;
  }
  return { files: counter.files, bytes: counter.bytes };
}

function walk(dirFd: number, dev: number, counter: TreeCounter, depth: number): void {
  if (depth > MAX_TREE_DEPTH) counter.refuse('depth');
  eachName(dirFd, (name) => {
    let stat: Stats;
    try {
      // lstat of the entry (`/proc/self/fd/<fd>/<name>` on Linux): the last component is never followed.
      stat = lstatSync(at(dirFd, name));
    } catch {
      return; // gone meanwhile
    }
    counter.add(stat);
    if (!stat.isDirectory() || stat.dev !== dev) return;
    let child: number;
    try {
      child = openSync(at(dirFd, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') counter.refuse('unreadable');
      return; // replaced or removed meanwhile
    }
    try {
      rememberDirAt(child, dirFd, name);
      if (fstatSync(child).dev === dev) walk(child, dev, counter, depth + 1);
    } finally {
      forgetFd(child);
      closeSync(child);
    }
  });
}
