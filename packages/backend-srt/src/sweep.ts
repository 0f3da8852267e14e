/**
 * What a killed bridge's srt session leaves on the host, and the next start's sweep of it (Linux,
 * as `local` sweeps its own): each session root and the engine's directory hold the pid of the
 * process that made them; one whose owner is gone is removed, and with the engine's directory
 * the sockets of srt's bridge that it recorded. Only entries owned by this user and writable by
 * no one else are considered; nothing is followed; the owner file is removed last, so a removal
 * that fails is retried by the next start.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { closeDir, type OpenDir, openDirAt, readFileAt, removeAt, writeFileAt } from '@mcpsandbox/host-side';

export const OWNER_FILE = '.owner-pid';
const SOCKETS_FILE = 'sockets';
/** srt 0.0.83 names its bridge sockets so: `<tmp>/claude-(http|socks)-<hex>.sock`. */
const SRT_SOCKET = /^claude-(http|socks)-[0-9a-f]{8,64}\.sock$/;

/** Opens `path` (a directory the host made just now) and writes its owner file. */
export function markOwner(path: string, extra: Readonly<Record<string, string>> = {}): void {
  const parentFd = openSync(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
  let dir: OpenDir | undefined;
  try {
    dir = openDirAt({ fd: parentFd, stat: fstatSync(parentFd) }, basename(path));
    if (!dir) return;
    for (const [name, text] of Object.entries(extra)) writeFileAt(dir, name, text);
    writeFileAt(dir, OWNER_FILE, String(process.pid));
  } finally {
    closeDir(dir);
    closeSync(parentFd);
  }
}

/** Records srt's bridge sockets in the engine's directory, for the sweep after a kill. */
export function recordSockets(engineDir: string, sockets: readonly string[]): void {
  markOwner(engineDir, { [SOCKETS_FILE]: sockets.join('\n') });
}

/** Removes the directories named `<prefix>…` in `parent` whose owner process is gone. */
export function sweepDead(parent: string, prefix: string): void {
  if (process.platform !== 'linux') return;
  let fd: number;
  try {
    fd = openSync(parent, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    return;
  }
  try {
    const state: OpenDir = { fd, stat: fstatSync(fd) };
    const uid = process.getuid?.() ?? 0;
    for (const name of readdirSync(`/proc/self/fd/${fd}`)) {
      if (!name.startsWith(prefix)) continue;
      let dir: OpenDir | undefined;
      try {
        dir = openDirAt(state, name);
        if (!dir || dir.stat.uid !== uid || (dir.stat.mode & 0o022) !== 0) continue;
        const owner = readFileAt(dir, [OWNER_FILE], 32)?.toString('latin1') ?? '';
        if (!/^[1-9]\d{0,9}$/.test(owner) || isAlive(Number(owner))) continue;
        const sockets = readFileAt(dir, [SOCKETS_FILE], 4096)?.toString('latin1') ?? '';
        const id = { dev: dir.stat.dev, ino: dir.stat.ino };
        closeDir(dir);
        dir = undefined;
        removeSockets(parent, sockets.split('\n'));
        removeAt(state, name, id, { last: OWNER_FILE });
      } catch {
        // not ours, or changed meanwhile: leave it
      } finally {
        closeDir(dir);
      }
    }
  } finally {
    closeSync(fd);
  }
}

/** srt's sockets that a dead engine recorded: only srt's names, in this directory, sockets of ours. */
function removeSockets(parent: string, paths: readonly string[]): void {
  const uid = process.getuid?.() ?? 0;
  for (const path of paths) {
    if (dirname(path) !== parent || !SRT_SOCKET.test(basename(path))) continue;
    try {
      const stat = lstatSync(path);
      if (stat.isSocket() && stat.uid === uid) unlinkSync(join(parent, basename(path)));
    } catch {
      // gone already
    }
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
