import { lstat, readdir } from 'node:fs/promises';
import { basename, join, posix, resolve } from 'node:path';
import { COPY_LIMITS, type MountSpec, UsageError } from '@mcpsandbox/core';

/** Where `--fs <path>` lands without a target, as in mcp-sandbox 0.2. */
export const FS_DEFAULT_BASE = '/home/user';

/** `--fs <path>[:<to>]`: a copy mount; `<to>` defaults to `/home/user/<basename>`. */
export function parseFs(text: string, cwd: string): MountSpec {
  const colon = text.indexOf(':');
  const local = colon === -1 ? text : text.slice(0, colon);
  const target = colon === -1 ? undefined : text.slice(colon + 1);
  if (local === '' || target === '') {
    throw new UsageError(`--fs ${text}: expected <host path>[:<absolute path in the sandbox>]`);
  }
  if (target !== undefined && !target.startsWith('/')) {
    throw new UsageError(`--fs ${text}: the sandbox path must be absolute (start with /)`);
  }
  const hostPath = resolve(cwd, local);
  return {
    hostPath,
    sandboxPath: posix.normalize(target ?? posix.join(FS_DEFAULT_BASE, basename(hostPath))),
    mode: 'copy',
  };
}

export interface CopySummary {
  readonly files: number;
  readonly bytes: number;
  readonly skippedLinks: number;
}

/**
 * Walks a `--fs` source before any sandbox exists, as 0.2 did: a missing path, a symlink given
 * directly, or more than 2000 files / 50 MiB is a usage error. Symlinks inside are skipped,
 * never followed; sockets, FIFOs and devices are skipped too. The backend copies with the same
 * rules and caps, so a tree that changes in between is still bounded.
 */
export async function checkCopy(text: string, mount: MountSpec): Promise<CopySummary> {
  const stat = await lstat(mount.hostPath).catch(() => undefined);
  if (!stat) throw new UsageError(`--fs ${text}: ${mount.hostPath} does not exist`);
  if (stat.isSymbolicLink()) throw new UsageError(`--fs ${text}: refusing to follow a symlink`);
  if (!stat.isFile() && !stat.isDirectory()) {
    throw new UsageError(`--fs ${text}: neither a regular file nor a directory`);
  }
  let files = 0;
  let bytes = 0;
  let dirs = 0;
  let entries = 0;
  let skippedLinks = 0;
  const tooBig = (what: string) =>
    new UsageError(
      `--fs ${text}: more than ${what}; copy a narrower directory, or use --mount for a read-only view`,
    );
  const count = (size: number) => {
    files++;
    bytes += size;
    if (files > COPY_LIMITS.maxFiles) throw tooBig(`${COPY_LIMITS.maxFiles} files`);
    if (bytes > COPY_LIMITS.maxBytes) throw tooBig(formatBytes(COPY_LIMITS.maxBytes));
  };
  if (stat.isFile()) {
    count(stat.size);
    return { files, bytes, skippedLinks };
  }
  // A pre-count by path, iterative: the backend copies by descriptor and enforces every cap
  // again, so an entry that vanished or changed under this walk (or a path too long to name) is
  // left to it rather than reported as a failure.
  const pending: Array<{ dir: string; depth: number }> = [{ dir: mount.hostPath, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const listed = await readdir(next.dir, { withFileTypes: true }).catch(() => undefined);
    if (!listed) continue;
    entries += listed.length;
    if (entries > COPY_LIMITS.maxEntries) throw tooBig(`${COPY_LIMITS.maxEntries} entries`);
    for (const entry of listed) {
      const path = join(next.dir, entry.name);
      if (entry.isSymbolicLink()) skippedLinks++;
      else if (entry.isDirectory()) {
        if (++dirs > COPY_LIMITS.maxDirs) throw tooBig(`${COPY_LIMITS.maxDirs} directories`);
        if (next.depth + 1 > COPY_LIMITS.maxDepth) throw tooBig(`${COPY_LIMITS.maxDepth} directory levels`);
        pending.push({ dir: path, depth: next.depth + 1 });
      } else if (entry.isFile()) {
        const size = await lstat(path).then(
          (found) => found.size,
          () => 0,
        );
        count(size);
      }
    }
  }
  return { files, bytes, skippedLinks };
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
