import { chownSync, lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError, UsageError } from '@mcpsandbox/core';
import { dirPath } from './fd-paths.js';
import {
  at,
  closeDir,
  HostFsError,
  lstatAt,
  type OpenDir,
  openDirAt,
  openOwnedDir,
  removeAt,
  renameAt,
  writeFileAt,
} from './host-fs.js';

/**
 * Persistent state (`--state <name>`): a server's own writable area kept across sessions, one
 * directory per name. Layout, with who may write what:
 *
 *   <root>/                 host-owned
 *   <root>/<name>/          host-owned: the sandbox never sees it, so it cannot plant links here
 *   <root>/<name>/home/     the sandbox's HOME (sandbox-writable)
 *   <root>/<name>/pkg-<k>/  a writable copy of the installed package with cache key <k>
 *
 * The host only creates, binds, measures (lstat, never following a link) and removes these; it
 * never reads or writes inside the sandbox-writable directories.
 */

const SESSION_PREFIX = '.session-';

/** `state rm` of a state that a live session uses. */
export class StateInUseError extends SandboxError {
  constructor(message: string) {
    super('E_STATE_IN_USE', message);
  }
}

function liveSessions(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.startsWith(SESSION_PREFIX));
  } catch {
    return [];
  }
  return names
    .map((n) => Number(n.slice(SESSION_PREFIX.length)))
    .filter((pid) => Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function checkStateName(name: string): string {
  if (!NAME.test(name) || name.includes('..')) {
    throw new UsageError(
      `--state ${JSON.stringify(name)}: a state name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  return name;
}

/**
 * `$XDG_STATE_HOME/mcp-sandbox/state`, else `~/.local/state/mcp-sandbox/state`; as root (whose
 * sandboxes run as another user) `/var/lib/mcp-sandbox/state`, outside root's closed home.
 */
export function defaultStateRoot(
  hostEnv: Readonly<Record<string, string | undefined>>,
  home: string,
  runsAsOther: boolean,
): string {
  if (hostEnv.XDG_STATE_HOME) return join(hostEnv.XDG_STATE_HOME, 'mcp-sandbox', 'state');
  if (runsAsOther) return '/var/lib/mcp-sandbox/state';
  return join(home, '.local', 'state', 'mcp-sandbox', 'state');
}

export interface StateDirs {
  readonly home: string;
  /** Ends this session's claim on the state (see `removeState`). */
  release(): void;
  /** The writable copy of an installed package, and whether it was just created (empty). */
  packageCopy(key: string): { readonly dir: string; readonly fresh: boolean };
}

/** Creates (or reuses) a named state's directories, writable by the sandbox's user. */
export function openState(
  root: string,
  name: string,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): StateDirs {
  checkStateName(name);
  // As root the sandbox user passes through (0711) to the directories bound for it.
  const mode = runAs ? 0o711 : 0o700;
  mkdirSync(root, { recursive: true, mode });
  const rootDir = openOwnedDir(root);
  let dir: OpenDir | undefined;
  try {
    try {
      mkdirSync(at(rootDir.fd, name), { mode });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    dir = openDirAt(rootDir, name);
    if (!dir || dir.stat.uid !== (process.getuid?.() ?? 0)) {
      throw new HostFsError(`state ${name} at ${root} is not a directory of this user's`);
    }
    ensureSandboxDir(dir, 'home', runAs);
    // While any session runs with it, removal is refused: deleting a tree that a live sandbox can
    // still change is how a planted link turns `rm -r` against the host.
    const claim = `${SESSION_PREFIX}${process.pid}`;
    writeFileAt(dir, claim, '');
    const path = join(root, name);
    return {
      home: join(path, 'home'),
      release: () => rmSync(join(path, claim), { force: true }),
      packageCopy(key) {
        const entry = `pkg-${key}`;
        const again = openOwnedDir(path);
        try {
          return { dir: join(path, entry), fresh: ensureSandboxDir(again, entry, runAs) };
        } finally {
          closeDir(again);
        }
      },
    };
  } finally {
    closeDir(dir);
    closeDir(rootDir);
  }
}

/**
 * Makes `entry` in `dir` (host-owned, never seen by a sandbox, so what is in it the host made) a
 * directory the sandbox's user owns. True when it was created now.
 */
function ensureSandboxDir(
  dir: OpenDir,
  entry: string,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): boolean {
  const found = lstatAt(dir, [entry]);
  if (found?.isDirectory()) return false;
  if (found) throw new HostFsError(`${entry} in the state directory is not a directory`);
  mkdirSync(at(dir.fd, entry), { mode: 0o700 });
  if (runAs) chownSync(at(dir.fd, entry), runAs.uid, runAs.gid);
  return true;
}

export interface StateInfo {
  readonly name: string;
  readonly path: string;
  readonly bytes: number;
  readonly files: number;
  readonly modified: Date;
  /** The walk stopped short (deeper than MEASURE_DEPTH, more than MEASURE_ENTRIES, or changed under it). */
  readonly partial?: true;
}

/** Directory levels `state ls` descends (one descriptor each); deeper trees are counted as partial. */
const MEASURE_DEPTH = 128;
/** Entries `state ls` looks at in one state before it stops counting. */
const MEASURE_ENTRIES = 1_000_000;

export function listStates(root: string): StateInfo[] {
  try {
    lstatSync(root);
  } catch {
    return [];
  }
  const rootDir = openOwnedDir(root);
  try {
    // Only names a state can have: nothing with a control character or a newline is ever shown.
    const names = readdirSync(dirPath(rootDir.fd)).filter((n) => NAME.test(n) && !n.includes('..'));
    const states: StateInfo[] = [];
    for (const name of names.sort()) {
      const measured = measure(rootDir, name);
      if (measured) states.push({ name, path: join(root, name), ...measured });
    }
    return states;
  } finally {
    closeDir(rootDir);
  }
}

interface Frame {
  readonly dir: OpenDir;
  readonly names: string[];
  next: number;
}

/**
 * Sizes by `lstat` through directory descriptors, iteratively: a link the server planted is
 * counted, never followed; a directory swapped for a link mid-walk is refused by the no-follow
 * open; no path longer than one name is built, and depth costs no stack.
 */
function measure(
  root: OpenDir,
  name: string,
): { bytes: number; files: number; modified: Date; partial?: true } | undefined {
  let top: OpenDir | undefined;
  try {
    top = openDirAt(root, name);
  } catch {
    return undefined;
  }
  if (!top) return undefined;
  let bytes = 0;
  let files = 0;
  let seen = 0;
  let partial = false;
  let modified = top.stat.mtime;
  const stack: Frame[] = [{ dir: top, names: readdirSync(dirPath(top.fd)), next: 0 }];
  try {
    while (stack.length > 0) {
      const frame = stack[stack.length - 1] as Frame;
      const entry = frame.names[frame.next++];
      if (entry === undefined) {
        closeDir(frame.dir);
        stack.pop();
        continue;
      }
      if (++seen > MEASURE_ENTRIES) {
        partial = true;
        break;
      }
      try {
        const stat = lstatAt(frame.dir, [entry]);
        if (!stat) continue;
        if (stat.mtime > modified) modified = stat.mtime;
        if (!stat.isDirectory()) {
          if (stack.length > 1 || !entry.startsWith(SESSION_PREFIX)) {
            files++;
            bytes += stat.size;
          }
        } else if (stack.length >= MEASURE_DEPTH) {
          partial = true;
        } else {
          const child = openDirAt(frame.dir, entry);
          if (child) stack.push({ dir: child, names: readdirSync(dirPath(child.fd)), next: 0 });
        }
      } catch {
        // changed under the walk (a link swapped in, another file system, locked): not counted
        partial = true;
      }
    }
  } finally {
    for (const frame of stack) closeDir(frame.dir);
  }
  return { bytes, files, modified, ...(partial ? { partial: true as const } : {}) };
}

const DOOMED = /^\.removing-[A-Za-z0-9][A-Za-z0-9._-]{0,63}-([1-9]\d{0,9})$/;

/**
 * Removes a named state. It is first renamed, inside the host-owned root, out of every future
 * session's reach; it is then removed by descriptor (links unlinked, never followed, no depth
 * limit). What an earlier `state rm` left (it was killed, or failed) is removed with it.
 */
export function removeState(root: string, name: string): boolean {
  const dir = join(root, checkStateName(name));
  const users = liveSessions(dir);
  if (users.length > 0) {
    throw new StateInUseError(
      `state ${name} is in use by mcp-sandbox process ${users.join(', ')}; stop that session, then remove it`,
    );
  }
  const rootDir = (() => {
    try {
      return openOwnedDir(root);
    } catch {
      return undefined;
    }
  })();
  if (!rootDir) return false;
  try {
    for (const left of readdirSync(dirPath(rootDir.fd))) {
      const pid = DOOMED.exec(left)?.[1];
      if (pid !== undefined && !alive(Number(pid))) removeAt(rootDir, left);
    }
    if (!lstatAt(rootDir, [name])) return false;
    // Out of every future session's reach first, then removed by descriptor, links unlinked.
    const doomed = `.removing-${name}-${process.pid}`;
    renameAt(rootDir, name, doomed);
    removeAt(rootDir, doomed);
  } finally {
    closeDir(rootDir);
  }
  return true;
}
