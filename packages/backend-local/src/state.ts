import { chownSync, lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError, UsageError } from '@mcpsandbox/core';
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
}

export function listStates(root: string): StateInfo[] {
  let names: string[];
  try {
    names = readdirSync(root).filter((n) => NAME.test(n));
  } catch {
    return [];
  }
  return names.sort().map((name) => {
    const path = join(root, name);
    const { bytes, files, modified } = measure(path);
    return { name, path, bytes, files, modified };
  });
}

/** Sizes by lstat only: a link the server planted is counted, never followed. */
function measure(path: string): { bytes: number; files: number; modified: Date } {
  let bytes = 0;
  let files = 0;
  let modified = lstatSync(path).mtime;
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      const stat = lstatSync(full);
      if (stat.mtime > modified) modified = stat.mtime;
      if (entry.isDirectory()) visit(full);
      else if (!entry.name.startsWith(SESSION_PREFIX) || dir !== path) {
        files++;
        bytes += stat.size;
      }
    }
  };
  visit(path);
  return { bytes, files, modified };
}

/**
 * Removes a named state. It is first renamed, inside the host-owned root, out of every future
 * session's reach; `rm` then unlinks links rather than following them.
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
