import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { closeDir, openOwnedDir, removeAt } from '@mcpsandbox/host-side';
import { type GroupRecord, ownGroups, type PsRow, sessionProcesses, signalAll } from './processes.js';

// The host owns every directory it touches by path here (the session root is 0700 and not in the
// profile's writable set: only home/ and tmp/ inside it are), and opens the owner file with
// O_NOFOLLOW. What a sandbox could write is removed with host-side's no-follow helpers.

export const SESSION_PREFIX = 'mcp-sandbox-sb-';
/** Who owns a session root: `<owner pid> <pgid>@<leader start>…`, rewritten as processes start. */
export const OWNER_FILE = '.owner';

export interface SessionRoot {
  readonly path: string;
  readonly home: string;
  readonly tmp: string;
}

/**
 * A session's own directory under the state dir, by its real path (Seatbelt checks /private/var,
 * never /var), mode 0700, holding home/ and tmp/ (the sandbox's) and the owner file (the host's).
 */
export function makeSessionRoot(stateDir: string, home?: string): SessionRoot {
  const path = realpathSync(mkdtempSync(join(stateDir, SESSION_PREFIX)));
  writeOwner(path, []);
  mkdirSync(join(path, 'tmp'), { mode: 0o700 });
  if (!home) mkdirSync(join(path, 'home'), { mode: 0o700 });
  return { path, home: home ?? join(path, 'home'), tmp: join(path, 'tmp') };
}

/** Records the process groups a session started (atomically), so that a later start can end them. */
export function writeOwner(root: string, groups: Iterable<GroupRecord>): void {
  const next = join(root, `${OWNER_FILE}.next`);
  const text = [String(process.pid), ...[...groups].map((g) => `${g.pgid}@${g.start}`)].join(' ');
  writeFileSync(next, text, { mode: 0o600, flag: 'w' });
  renameSync(next, join(root, OWNER_FILE));
}

function readOwner(root: string): string {
  const fd = openSync(join(root, OWNER_FILE), constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    if (!fstatSync(fd).isFile()) return '';
    const buffer = Buffer.alloc(1024);
    return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)).toString('latin1');
  } finally {
    closeSync(fd);
  }
}

/**
 * Ends what sessions of dead owners left: every process of their recorded groups and those
 * processes' descendants, then their directories. Only directories of this user that no one else
 * may write, with a well-formed owner file read without following links, are touched.
 */
export function sweepAbandoned(
  stateDir: string,
  ps: () => readonly PsRow[],
  alive: (pid: number) => boolean,
): number {
  let names: string[];
  try {
    names = readdirSync(stateDir).filter((name) => name.startsWith(SESSION_PREFIX));
  } catch {
    return 0;
  }
  const uid = process.getuid?.() ?? 0;
  let swept = 0;
  for (const name of names) {
    const root = join(stateDir, name);
    try {
      const stat = lstatSync(root);
      if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o022) !== 0) continue;
      const text = readOwner(root);
      if (!/^[1-9]\d{0,9}( [1-9]\d{0,9}@\d{1,12}){0,64}$/.test(text)) continue;
      const [owner, ...groups] = text.split(' ') as [string, ...string[]];
      if (alive(Number(owner))) continue;
      const records = groups.map((g) => {
        const [pgid, start] = g.split('@').map(Number) as [number, number];
        return { pgid, start };
      });
      const rows = ps();
      const own = ownGroups(rows, records);
      signalAll(own, sessionProcesses(rows, own), 'SIGKILL');
      removeOutOfReach(root);
      swept++;
    } catch {
      // not ours, or changed meanwhile: leave it
    }
  }
  return swept;
}

/**
 * Removes a directory a sandbox could write (a session root, an install step's home), first
 * renamed out of every profile's writable paths: Seatbelt checks each access by its path, so a
 * process that outlived its session (macOS has no pid namespace) can no longer change the tree
 * the host removes; the removal is by descriptor, links unlinked, never followed. A removal that
 * fails leaves `<name>.removing`, which a later start sweeps (it keeps the session prefix).
 */
export function removeOutOfReach(path: string): void {
  const doomed = `${path}.removing`;
  try {
    renameSync(path, doomed);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const dir = openOwnedDir(doomed);
  try {
    for (const name of readdirSync(doomed)) removeAt(dir, name);
  } finally {
    closeDir(dir);
  }
  rmdirSync(doomed);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
