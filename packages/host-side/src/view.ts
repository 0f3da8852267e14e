import { closeSync, lstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { findOnPath } from './path-lookup.js';

/** Where the private home is mounted inside, when the host has a /home to hide. */
export const SANDBOX_HOME = '/home/sandbox';

/**
 * Host directories the sandbox never sees: where users keep secrets and where services keep
 * their sockets. Everything else of the system is visible read-only.
 */
export const ALWAYS_HIDDEN = [
  '/root',
  '/home',
  '/tmp',
  '/var/tmp',
  '/run',
  '/var/run',
  '/mnt',
  '/media',
] as const;

export interface Bind {
  readonly source: string;
  readonly dest: string;
  readonly mode: 'ro' | 'rw';
}

/** The hidden roots that exist as real directories here (symlinks such as /var/run are skipped). */
export function hiddenRoots(hostHome: string | undefined): string[] {
  const candidates: string[] = [...ALWAYS_HIDDEN];
  if (hostHome && isAbsolute(hostHome)) {
    candidates.push(hostHome);
    try {
      candidates.push(realpathSync(hostHome));
    } catch {
      // a home that does not exist hides nothing
    }
  }
  const roots = [...new Set(candidates)].filter((path) => {
    try {
      const stat = lstatSync(path);
      return stat.isDirectory() && path !== '/';
    } catch {
      return false;
    }
  });
  roots.sort();
  return roots.filter((path) => !roots.some((other) => other !== path && isInside(path, other)));
}

export function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);
}

export function isHidden(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => isInside(path, root));
}

/**
 * What must be bound read-only for `command` to start when it lives under a hidden directory:
 * the directory it was found in (so PATH lookups and relative symlinks work) and the install
 * prefix of its real file (`~/.nvm/versions/node/v20` for node: the binary and its lib/).
 * A prefix directly under a hidden root (`~/.local`) is too broad; then only the file's own
 * directory is bound. Script interpreters named by a `#!` line get the same treatment.
 */
export function commandBinds(
  found: string,
  roots: readonly string[],
): { binds: Bind[]; pathDir: string | undefined } {
  const binds: Bind[] = [];
  const add = (dir: string) => {
    if (isHidden(dir, roots)) binds.push({ source: dir, dest: dir, mode: 'ro' });
  };
  const visit = (file: string, depth: number) => {
    add(dirname(file));
    let real: string;
    try {
      real = realpathSync(file);
    } catch {
      return;
    }
    add(installPrefix(real, roots));
    if (depth === 0) {
      const interpreter = shebangInterpreter(real);
      if (interpreter) visit(interpreter, 1);
    }
  };
  visit(found, 0);
  return { binds: dedupeBinds(binds), pathDir: dirname(found) };
}

function installPrefix(real: string, roots: readonly string[]): string {
  const dir = dirname(real);
  if (basename(dir) !== 'bin') return dir;
  const prefix = dirname(dir);
  const root = roots.find((r) => isInside(prefix, r));
  if (root === undefined) return prefix;
  const depth = prefix === root ? 0 : prefix.slice(root.length).split('/').filter(Boolean).length;
  return depth >= 2 ? prefix : dir;
}

function shebangInterpreter(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const head = Buffer.alloc(256);
    const n = readSync(fd, head, 0, head.length, 0);
    const line = head.subarray(0, n).toString('latin1').split('\n')[0] ?? '';
    if (!line.startsWith('#!')) return undefined;
    const interpreter = line.slice(2).trim().split(/\s+/)[0];
    return interpreter && isAbsolute(interpreter) ? interpreter : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Drops binds already covered by another bind of the same mode or a read-write one. */
export function dedupeBinds(binds: readonly Bind[]): Bind[] {
  const unique = [...new Map(binds.map((b) => [`${b.source}\0${b.dest}\0${b.mode}`, b])).values()];
  return unique.filter(
    (bind) =>
      !unique.some(
        (other) =>
          other !== bind &&
          other.source !== bind.source &&
          isInside(bind.source, other.source) &&
          bind.dest === join(other.dest, bind.source.slice(other.source.length)) &&
          (other.mode === bind.mode || other.mode === 'rw'),
      ),
  );
}

/** Finds a command the way the sandbox's PATH would, on the host side. */
export function locateCommand(name: string, hostPath: string | undefined, cwd: string): string | undefined {
  if (name.includes('/')) {
    const path = resolve(cwd, name);
    try {
      statSync(path);
      return path;
    } catch {
      return undefined;
    }
  }
  return findOnPath(name, hostPath);
}
