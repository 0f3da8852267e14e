import {
  closeSync,
  constants,
  createReadStream,
  fchownSync,
  fstatSync,
  mkdirSync,
  opendirSync,
  openSync,
  realpathSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { COPY_LIMITS, SandboxFailureError } from '@mcpsandbox/core';
import { dirPath, fdPathStrategy, forgetFd, rememberDir, rememberDirAt } from './fd-paths.js';
import { at } from './host-fs.js';

export interface CopyInLimits {
  readonly maxFiles: number;
  readonly maxBytes: number;
  /** Directories made on the host (a tree of empty ones costs no file and no byte). */
  readonly maxDirs?: number;
  /** Entries looked at, copied or not (links and special files too). */
  readonly maxEntries?: number;
  /** Directory levels below the source; one pair of descriptors is held per level. */
  readonly maxDepth?: number;
}

/** The caps a caller does not set. */
const DEFAULTS = {
  maxDirs: COPY_LIMITS.maxDirs,
  maxEntries: COPY_LIMITS.maxEntries,
  maxDepth: COPY_LIMITS.maxDepth,
} as const;

export interface CopyInResult {
  readonly files: number;
  readonly bytes: number;
  /** Symlinks, special files and entries gone mid-copy left out: never followed, never opened. */
  readonly skipped: number;
}

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;

interface Level {
  readonly from: number;
  readonly to: number;
  readonly names: string[];
  next: number;
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Copies `source` (a file or a directory tree) to `dest`, which must not exist, for a `copy`
 * mount: the sandbox gets a private writable copy and nothing comes back. The source may have
 * been written by a sandbox (a folder granted read-write, in this session or an earlier one), so
 * it is walked as attacker-chosen: by directory descriptor, each entry opened `O_NOFOLLOW`
 * relative to its parent's descriptor (fd-paths.ts: `/proc/self/fd/<fd>/<name>` on Linux) and checked with `fstat`,
 * so a folder swapped for a link mid-copy is refused, not followed, and no path longer than one
 * name is ever built (no `ENAMETOOLONG`, no recursion). Files, bytes, directories, entries and
 * depth are capped, against what was actually opened.
 */
export async function copyIn(
  source: string,
  dest: string,
  options: { readonly owner?: { uid: number; gid: number }; readonly limits: CopyInLimits },
): Promise<CopyInResult> {
  const { owner } = options;
  const limits = { ...DEFAULTS, ...options.limits };
  const count = { files: 0, bytes: 0, dirs: 0, entries: 0, skipped: 0 };
  const tooBig = (what: string) =>
    new SandboxFailureError(
      `copy of ${source}: ${what}; copy a narrower path, or mount it read-only (:ro) instead of copying`,
      { code: 'E_COPY_LIMIT' },
    );

  let top: number;
  try {
    top = openSync(source, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if (errno(error) === 'ELOOP') {
      throw new SandboxFailureError(`copy of ${source}: refusing to follow a symlink`, {
        code: 'E_COPY_SYMLINK',
      });
    }
    throw error;
  }
  const topStat = fstatSync(top);
  if (topStat.isFile()) {
    try {
      await copyFile(top, dest, owner, limits, count, tooBig);
    } finally {
      closeSync(top);
    }
    return { files: count.files, bytes: count.bytes, skipped: count.skipped };
  }
  if (!topStat.isDirectory()) {
    closeSync(top);
    throw new SandboxFailureError(`copy of ${source}: neither a regular file nor a directory`, {
      code: 'E_COPY',
    });
  }
  const stack: Level[] = [];
  try {
    mkdirSync(dest, { mode: 0o700 });
    const destFd = openSync(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    stack.push({ from: top, to: destFd, names: [], next: 0 });
    if (fdPathStrategy() === 'portable') {
      rememberDir(top, realpathSync(source));
      rememberDir(destFd, realpathSync(dest));
    }
    if (owner) fchownSync(destFd, owner.uid, owner.gid);
    (stack[0] as Level).names.push(...listNames(top, limits, count, tooBig));
    while (stack.length > 0) {
      const level = stack[stack.length - 1] as Level;
      const name = level.names[level.next++];
      if (name === undefined) {
        closeLevel(level);
        stack.pop();
        continue;
      }
      const child = await copyEntry(level, name, { owner, limits, count, tooBig, depth: stack.length });
      if (child) stack.push(child);
    }
  } catch (error) {
    if (stack.length === 0) closeSync(top);
    throw error;
  } finally {
    for (const level of stack) closeLevel(level);
  }
  return { files: count.files, bytes: count.bytes, skipped: count.skipped };
}

type Counts = { files: number; bytes: number; dirs: number; entries: number; skipped: number };
type Limits = Required<CopyInLimits>;
type TooBig = (what: string) => SandboxFailureError;

/** The names in a directory, read in batches, each counted against the entry cap as it is read. */
function listNames(dirFd: number, limits: Limits, count: Counts, tooBig: TooBig): string[] {
  const names: string[] = [];
  const dir = opendirSync(dirPath(dirFd));
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
      if (++count.entries > limits.maxEntries) throw tooBig(`more than ${limits.maxEntries} entries`);
      names.push(entry.name);
    }
  } finally {
    dir.closeSync();
  }
  return names.sort();
}

/** Copies one entry of `level`; a directory is made and returned to be walked next. */
async function copyEntry(
  level: Level,
  name: string,
  ctx: { owner?: { uid: number; gid: number }; limits: Limits; count: Counts; tooBig: TooBig; depth: number },
): Promise<Level | undefined> {
  const { owner, limits, count, tooBig } = ctx;
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO swapped in must not hang the host. A link (ELOOP) is left out.
    fd = openSync(at(level.from, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    const code = errno(error);
    // ELOOP: a link; ENOENT: gone since it was listed; ENXIO: a socket.
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENXIO' || code === 'EACCES') {
      count.skipped++;
      return undefined;
    }
    throw error;
  }
  const stat = fstatSync(fd);
  if (stat.isFile()) {
    try {
      await copyFile(fd, at(level.to, name), owner, limits, count, tooBig);
    } finally {
      closeSync(fd);
    }
    return undefined;
  }
  if (!stat.isDirectory()) {
    closeSync(fd);
    count.skipped++;
    return undefined;
  }
  try {
    if (++count.dirs > limits.maxDirs) throw tooBig(`more than ${limits.maxDirs} directories`);
    if (ctx.depth > limits.maxDepth) throw tooBig(`more than ${limits.maxDepth} directory levels`);
    mkdirSync(at(level.to, name), { mode: 0o700 });
    const to = openSync(at(level.to, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    try {
      rememberDirAt(fd, level.from, name);
      rememberDirAt(to, level.to, name);
      if (owner) fchownSync(to, owner.uid, owner.gid);
      return { from: fd, to, names: listNames(fd, limits, count, tooBig), next: 0 };
    } catch (error) {
      forgetFd(to);
      closeSync(to);
      throw error;
    }
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function closeLevel(level: Level): void {
  for (const fd of [level.from, level.to]) {
    forgetFd(fd);
    closeSync(fd);
  }
}

/** Copies the regular file open as `input` (already fstat'ed as one) to a new file at `to`. */
async function copyFile(
  input: number,
  to: string,
  owner: { uid: number; gid: number } | undefined,
  limits: Limits,
  count: Counts,
  tooBig: TooBig,
): Promise<void> {
  const stat = fstatSync(input);
  if (++count.files > limits.maxFiles) throw tooBig(`more than ${limits.maxFiles} files`);
  if (count.bytes + stat.size > limits.maxBytes) throw tooBig(`more than ${limits.maxBytes} bytes`);
  const output = await open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, stat.mode & 0o111 ? 0o700 : 0o600);
  try {
    if (owner) await output.chown(owner.uid, owner.gid);
    // Never more than fstat said: a file growing under us cannot push past the cap.
    const end = stat.size - 1;
    if (end >= 0) {
      await pipeline(
        createReadStream('', { fd: input, start: 0, end, autoClose: false }),
        output.createWriteStream(),
      );
    }
  } finally {
    await output.close().catch(() => {});
  }
  count.bytes += stat.size;
}
