import { lstatSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { isHidden } from '@mcpsandbox/host-side';

export const SANDBOX_TMP = '/tmp';
export const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

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
