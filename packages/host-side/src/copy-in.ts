import { constants } from 'node:fs';
import { chown, lstat, mkdir, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { SandboxFailureError } from '@mcpsandbox/core';

export interface CopyInLimits {
  readonly maxFiles: number;
  readonly maxBytes: number;
}

export interface CopyInResult {
  readonly files: number;
  readonly bytes: number;
  /** Symlinks and special files left out: never followed, never opened. */
  readonly skipped: number;
}

/**
 * Copies `source` (a file or a directory tree) to `dest`, which must not exist, for a `copy`
 * mount: the sandbox gets a private writable copy and nothing comes back. Runs before any process
 * of the sandbox exists, into a directory the host just created. Symlinks are never followed:
 * directories are walked with lstat and every file is opened with O_NOFOLLOW and checked with
 * fstat, so a link or FIFO swapped in after the walk is refused, not read. Caps hold against
 * the bytes actually read.
 */
export async function copyIn(
  source: string,
  dest: string,
  options: { readonly owner?: { uid: number; gid: number }; readonly limits: CopyInLimits },
): Promise<CopyInResult> {
  const { owner, limits } = options;
  let files = 0;
  let bytes = 0;
  let skipped = 0;
  const own = async (path: string) => {
    if (owner) await chown(path, owner.uid, owner.gid);
  };
  const tooBig = (what: string) =>
    new SandboxFailureError(`copy of ${source}: ${what}; copy a narrower path`, { code: 'E_COPY_LIMIT' });

  const copyFile = async (from: string, to: string): Promise<void> => {
    let input: Awaited<ReturnType<typeof open>>;
    try {
      input = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ELOOP') {
        skipped++;
        return;
      }
      throw error;
    }
    try {
      const stat = await input.stat();
      if (!stat.isFile()) {
        skipped++;
        return;
      }
      if (++files > limits.maxFiles) throw tooBig(`more than ${limits.maxFiles} files`);
      if (bytes + stat.size > limits.maxBytes) throw tooBig(`more than ${limits.maxBytes} bytes`);
      const output = await open(
        to,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        stat.mode & 0o111 ? 0o700 : 0o600,
      );
      try {
        // Never more than fstat said: a file growing under us cannot push past the cap.
        const end = stat.size - 1;
        if (end >= 0) {
          await pipeline(
            input.createReadStream({ start: 0, end, autoClose: false }),
            output.createWriteStream(),
          );
        }
      } finally {
        await output.close().catch(() => {});
      }
      bytes += stat.size;
      await own(to);
    } finally {
      await input.close().catch(() => {});
    }
  };

  const visit = async (from: string, to: string): Promise<void> => {
    const stat = await lstat(from);
    if (stat.isDirectory()) {
      await mkdir(to, { mode: 0o700 });
      await own(to);
      const names = await readdir(from);
      names.sort();
      for (const name of names) await visit(join(from, name), join(to, name));
    } else if (stat.isFile()) {
      await copyFile(from, to);
    } else {
      skipped++;
    }
  };

  const top = await lstat(source);
  if (top.isSymbolicLink()) {
    throw new SandboxFailureError(`copy of ${source}: refusing to follow a symlink`, {
      code: 'E_COPY_SYMLINK',
    });
  }
  await visit(source, dest);
  return { files, bytes, skipped };
}
