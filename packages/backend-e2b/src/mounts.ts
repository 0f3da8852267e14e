import { lstat, readdir } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { type MountSpec, UsageError } from '@mcpsandbox/core';

export interface MountLimits {
  readonly maxBytes: number;
  readonly maxFiles: number;
}

export const DEFAULT_MOUNT_LIMITS: MountLimits = { maxBytes: 100 * 1024 * 1024, maxFiles: 10_000 };

export interface CopyPlan {
  readonly files: readonly { hostPath: string; sandboxPath: string; size: number; executable: boolean }[];
  readonly directories: readonly string[];
  /** Symlinks left out: they are never followed, so nothing outside the grant is read. */
  readonly skippedLinks: readonly string[];
  readonly totalBytes: number;
}

/**
 * Walks the mounts on the host with lstat (never following a symlink) and checks the caps, so a
 * mount that is too large fails before any sandbox exists. Mounts are copies: nothing comes back.
 */
export async function planCopy(mounts: readonly MountSpec[], limits: MountLimits): Promise<CopyPlan> {
  const files: { hostPath: string; sandboxPath: string; size: number; executable: boolean }[] = [];
  const directories: string[] = [];
  const skippedLinks: string[] = [];
  let totalBytes = 0;

  const visit = async (hostPath: string, sandboxPath: string): Promise<void> => {
    let stats: Awaited<ReturnType<typeof lstat>>;
    try {
      stats = await lstat(hostPath);
    } catch (error) {
      throw new UsageError(`cannot read mount source ${hostPath}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    if (stats.isSymbolicLink()) {
      skippedLinks.push(hostPath);
      return;
    }
    if (stats.isDirectory()) {
      directories.push(sandboxPath);
      const entries = await readdir(hostPath);
      entries.sort();
      for (const entry of entries) await visit(join(hostPath, entry), posix.join(sandboxPath, entry));
      return;
    }
    if (!stats.isFile()) {
      skippedLinks.push(hostPath);
      return;
    }
    totalBytes += stats.size;
    files.push({ hostPath, sandboxPath, size: stats.size, executable: (stats.mode & 0o111) !== 0 });
    if (files.length > limits.maxFiles) {
      throw new UsageError(
        `mounts hold more than ${limits.maxFiles} files; e2b copies files into the VM, so mount a smaller directory or raise maxMountFiles`,
      );
    }
    if (totalBytes > limits.maxBytes) {
      throw new UsageError(
        `mounts hold more than ${limits.maxBytes} bytes; e2b copies files into the VM, so mount less or raise maxMountBytes`,
      );
    }
  };

  for (const mount of mounts) {
    if (!posix.isAbsolute(mount.sandboxPath)) {
      throw new UsageError(`mount target must be an absolute path inside the sandbox: ${mount.sandboxPath}`);
    }
    await visit(mount.hostPath, posix.normalize(mount.sandboxPath));
  }
  return { files, directories, skippedLinks, totalBytes };
}
