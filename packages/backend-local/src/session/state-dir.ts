/** Each sandbox's own directory under the state directory: who owns it, and sweeping those a killed bridge left. */
import { chmodSync, closeSync, constants, fstatSync, mkdtempSync, openSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SandboxFailureError } from '@mcpsandbox/core';
import {
  closeDir,
  type OpenDir,
  openDirAt,
  readFileAt,
  removeAt,
  STATE_PREFIX,
  writeFileAt,
} from '@mcpsandbox/host-side';

export const OWNER_FILE = '.owner-pid';

/** Opens a directory the host configured (the state dir), following it if it is a symlink. */
export function openDirPlain(path: string): number {
  return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);
}

/**
 * Makes a sandbox's own directory under the state directory, with its owner file; returns it and
 * what fstat said of it, so that close() removes that directory and no other.
 */
export function makeSandboxRoot(
  stateDir: string,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): { readonly root: string; readonly rootId: { readonly dev: number; readonly ino: number } } {
  // The root stays ours: only home/ inside it is the sandbox's (and the only part on disk;
  // /tmp and /dev/shm are capped tmpfs that vanish with the sandbox's mount namespace).
  // As root the sandbox user needs to pass through it (0711) but not to list or change it.
  const path = mkdtempSync(join(stateDir, STATE_PREFIX));
  let root: OpenDir | undefined;
  try {
    chmodSync(path, runAs ? 0o711 : 0o700);
    const state = openDirPlain(stateDir);
    try {
      root = openDirAt({ fd: state, stat: fstatSync(state) }, basename(path));
    } finally {
      closeSync(state);
    }
    if (!root) throw new SandboxFailureError(`${path} vanished`, { code: 'E_STATE_DIR' });
    // Who owns this directory: a later sandbox removes it if this process dies without close().
    writeFileAt(root, OWNER_FILE, String(process.pid));
    return { root: path, rootId: { dev: root.stat.dev, ino: root.stat.ino } };
  } finally {
    closeDir(root);
  }
}

/**
 * Removes private directories left by host processes that were killed before close(). The
 * state dir may be shared (the OS temp dir): only directories owned by this user and writable
 * by no one else are considered, their owner file is read without following links, and the
 * removal never follows a link the sandbox planted in the home it leaves behind.
 */
export function sweepAbandoned(stateDir: string): void {
  let state: number;
  try {
    state = openDirPlain(stateDir);
  } catch {
    return;
  }
  try {
    const parent: OpenDir = { fd: state, stat: fstatSync(state) };
    const uid = process.getuid?.() ?? 0;
    for (const name of readdirSync(`/proc/self/fd/${state}`)) {
      if (!name.startsWith(STATE_PREFIX)) continue;
      let dir: OpenDir | undefined;
      try {
        dir = openDirAt(parent, name);
        if (!dir || dir.stat.uid !== uid || (dir.stat.mode & 0o022) !== 0) continue;
        const text = readFileAt(dir, [OWNER_FILE], 32)?.toString('latin1') ?? '';
        if (!/^[1-9]\d{0,9}$/.test(text)) continue;
        if (isAlive(Number(text))) continue;
        const id = { dev: dir.stat.dev, ino: dir.stat.ino };
        closeDir(dir);
        dir = undefined;
        removeAt(parent, name, id, { last: OWNER_FILE });
      } catch {
        // not ours, or changed meanwhile: leave it
      } finally {
        closeDir(dir);
      }
    }
  } finally {
    closeSync(state);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes a sandbox's host directory: the one made at create (same inode), nothing it links to. */
export function removeStateDir(stateDir: string, name: string, id: { dev: number; ino: number }): void {
  let state: number;
  try {
    state = openDirPlain(stateDir);
  } catch {
    return;
  }
  try {
    removeAt(state, name, id, { last: OWNER_FILE });
  } catch {
    // left for the sweep of a later start
  } finally {
    closeSync(state);
  }
}
