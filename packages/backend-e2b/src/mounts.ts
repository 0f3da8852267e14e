import { constants, type FileHandle, lstat, open, readdir } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { type MountSpec, SandboxFailureError, UsageError } from '@mcpsandbox/core';
import { E2B_ERROR_CODES } from './errors.js';

export interface MountLimits {
  readonly maxBytes: number;
  /** Files and directories together. */
  readonly maxFiles: number;
}

/** 0.2.1's caps: mounts are copied over HTTPS into a VM, so they are meant to be small. */
export const DEFAULT_MOUNT_LIMITS: MountLimits = { maxBytes: 50 * 1024 * 1024, maxFiles: 2_000 };

/** A regular file as planning saw it; upload copies exactly this file, or nothing. */
export interface PlannedFile {
  readonly hostPath: string;
  readonly sandboxPath: string;
  readonly size: number;
  readonly executable: boolean;
  readonly dev: number;
  readonly ino: number;
}

export interface CopyPlan {
  readonly files: readonly PlannedFile[];
  readonly directories: readonly string[];
  /** Symlinks and special files left out: never followed, so nothing outside the grant is read. */
  readonly skippedLinks: readonly string[];
  readonly totalBytes: number;
}

/**
 * Walks the mounts on the host with lstat (never following a symlink) and checks the caps, so a
 * mount that is too large fails before any sandbox exists. Mounts are copies: nothing comes back.
 */
export async function planCopy(mounts: readonly MountSpec[], limits: MountLimits): Promise<CopyPlan> {
  const files: PlannedFile[] = [];
  const directories: string[] = [];
  const skippedLinks: string[] = [];
  let totalBytes = 0;

  const checkCount = () => {
    if (files.length + directories.length > limits.maxFiles) {
      throw new UsageError(
        `mounts hold more than ${limits.maxFiles} files and directories; e2b copies files into the VM, so mount a smaller directory or raise maxMountFiles`,
      );
    }
  };

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
      checkCount();
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
    files.push({
      hostPath,
      sandboxPath,
      size: stats.size,
      executable: (stats.mode & 0o111) !== 0,
      dev: stats.dev,
      ino: stats.ino,
    });
    checkCount();
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

/**
 * Reads a planned file for upload: opened without following a symlink and without blocking (a
 * FIFO swapped in cannot hang the host), then `fstat`ed; it must still be the regular file that
 * was planned (device, inode, size), and exactly its planned size is read. Anything else fails:
 * a file swapped or grown since planning is not copied at all.
 */
export async function readPlanned(file: PlannedFile): Promise<Buffer> {
  let handle: FileHandle;
  try {
    handle = await open(file.hostPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw changed(
      file,
      `cannot open it without following links (${(error as NodeJS.ErrnoException).code})`,
      error,
    );
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.dev !== file.dev || stats.ino !== file.ino) {
      throw changed(file, 'it is no longer the regular file that was checked');
    }
    if (stats.size !== file.size)
      throw changed(file, `its size changed from ${file.size} to ${stats.size} bytes`);
    const data = Buffer.alloc(file.size);
    let offset = 0;
    while (offset < file.size) {
      const { bytesRead } = await handle.read(data, offset, file.size - offset, offset);
      if (bytesRead === 0) throw changed(file, 'it shrank while it was read');
      offset += bytesRead;
    }
    return data;
  } finally {
    await handle.close();
  }
}

function changed(file: PlannedFile, why: string, cause?: unknown): SandboxFailureError {
  return new SandboxFailureError(
    `mount source ${file.hostPath} changed after it was checked (${why}); nothing of it was copied, and the session stops`,
    { code: E2B_ERROR_CODES.mountChanged, cause },
  );
}
