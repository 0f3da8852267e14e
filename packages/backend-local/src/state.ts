import { chownSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError, UsageError } from '@mcpsandbox/core';

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

/** `$XDG_STATE_HOME/mcp-sandbox/state`, `~/.local/state/…`, or /var/lib/… as root without a way to bind from /root. */
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
  const dir = join(root, checkStateName(name));
  mkdirSync(dir, { recursive: true, mode: runAs ? 0o755 : 0o700 });
  const own = (path: string): boolean => {
    let fresh = false;
    try {
      // The parent is host-owned and hidden from every sandbox: what is here, the host made.
      if (!lstatSync(path).isDirectory()) throw new Error(`${path} is not a directory`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      mkdirSync(path, { mode: 0o700 });
      if (runAs) chownSync(path, runAs.uid, runAs.gid);
      fresh = true;
    }
    return fresh;
  };
  const home = join(dir, 'home');
  own(home);
  // While any session runs with it, removal is refused: deleting a tree that a live sandbox can
  // still change is how a planted link turns `rm -r` against the host.
  const claim = join(dir, `${SESSION_PREFIX}${process.pid}`);
  writeFileSync(claim, '');
  return {
    home,
    release: () => rmSync(claim, { force: true }),
    packageCopy(key) {
      const copy = join(dir, `pkg-${key}`);
      return { dir: copy, fresh: own(copy) };
    },
  };
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
export async function removeState(root: string, name: string): Promise<boolean> {
  const dir = join(root, checkStateName(name));
  const users = liveSessions(dir);
  if (users.length > 0) {
    throw new StateInUseError(
      `state ${name} is in use by mcp-sandbox process ${users.join(', ')}; stop that session, then remove it`,
    );
  }
  const doomed = join(root, `.removing-${name}-${process.pid}-${Date.now()}`);
  try {
    renameSync(dir, doomed);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  await rm(doomed, { recursive: true, force: true });
  return true;
}
