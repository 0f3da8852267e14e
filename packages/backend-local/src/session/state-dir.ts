/** Each sandbox's own directory under the state directory: who owns it, and sweeping those a killed bridge left. */
import { closeSync, constants, fstatSync, openSync, readdirSync } from 'node:fs';
import { closeDir, type OpenDir, openDirAt, readFileAt, removeAt, STATE_PREFIX } from '@mcpsandbox/host-side';

export const OWNER_FILE = '.owner-pid';

/** Opens a directory the host configured (the state dir), following it if it is a symlink. */
export function openDirPlain(path: string): number {
  return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);
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
