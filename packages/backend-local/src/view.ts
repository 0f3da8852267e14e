import {
  closeSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  type Stats,
  statSync,
} from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { findOnPath } from './probe.js';

/** Where the private home is mounted inside, when the host has a /home to hide. */
export const SANDBOX_HOME = '/home/sandbox';
export const SANDBOX_TMP = '/tmp';
export const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

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

/** The sandbox's PATH: bound command directories first, then the host's visible entries. */
export function sandboxPath(
  extraDirs: readonly string[],
  hostPath: string | undefined,
  roots: readonly string[],
) {
  const dirs: string[] = [];
  const push = (dir: string) => {
    if (dir && isAbsolute(dir) && !dirs.includes(dir)) dirs.push(dir);
  };
  extraDirs.forEach(push);
  for (const dir of (hostPath ?? '').split(delimiter)) {
    if (dir && !isHidden(dir, roots)) push(dir);
  }
  for (const dir of FALLBACK_PATH.split(':')) push(dir);
  return dirs.join(':');
}

/**
 * How the read-only system is laid out so that every mount target can be made, at any absolute
 * path. A target that exists, or lies under a hidden root (an empty tmpfs), needs nothing: the
 * system is one read-only bind of `/`. A target whose parent is missing from the system (`/data`,
 * `/srv/data`) needs a place where bubblewrap can create it: the deepest existing directory above
 * it becomes a tmpfs inside the sandbox, with each of its host entries bound back read-only (or
 * recreated, for symlinks) and the tmpfs made read-only once the mounts are in. Nothing is created
 * on the host. For `/` itself, bubblewrap's own root is that tmpfs.
 */
export function systemView(
  targets: readonly string[],
  roots: readonly string[],
): { readonly args: string[]; readonly readOnly: string[] } {
  const expand = new Set<string>();
  for (const target of targets) {
    if (isHidden(target, roots) || lstatOrUndefined(target)) continue;
    let dir = dirname(target);
    while (dir !== '/' && !lstatOrUndefined(dir)?.isDirectory()) dir = dirname(dir);
    expand.add(dir);
  }
  if (expand.size === 0) return { args: ['--ro-bind', '/', '/'], readOnly: [] };
  // Shallow first, so that a deeper tmpfs lands on what the shallower one bound back.
  const dirs = [...expand].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b));
  const args: string[] = dirs[0] === '/' ? [] : ['--ro-bind', '/', '/'];
  for (const dir of dirs) {
    if (dir !== '/') args.push('--tmpfs', dir);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      names = [];
    }
    for (const name of names.sort()) {
      const path = join(dir, name);
      const stat = lstatOrUndefined(path);
      if (!stat) continue;
      if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
      else if (stat.isDirectory() || stat.isFile()) args.push('--ro-bind', path, path);
    }
  }
  return { args, readOnly: dirs };
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
