/**
 * The user's own npm cache (`npm config get cache`, `npm_config_cache`, default `~/.npm`),
 * which the fetch half of an npx install may write as a direct `npx` would: packages it
 * already holds are not downloaded again. Its path is user-written config, parsed here once
 * into a {@link UserNpmCache}; the host does nothing with it but name it as a bind source.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize } from 'node:path';
import { isInside } from './view.js';

declare const validated: unique symbol;

/** A cache directory that passed {@link checkUserNpmCache}; only ever made there. */
export interface UserNpmCache {
  readonly path: string;
  /**
   * The cache is this process's own (root's) while installs write as another uid: never shown to
   * a sandbox; the host copies from it only tarballs the registry vouches for (npx/seed-cache.ts).
   */
  readonly readOnly: boolean;
  readonly [validated]: true;
}

/** What the cache must stay clear of (all host paths; compared by their real paths). */
export interface CachePlaces {
  /** The uid the install step writes as: the user, or the sandbox user when running as root. */
  readonly ownerUid: number;
  /** mcp-sandbox's own install cache: entries the host renames and reads. */
  readonly installCacheRoot: string;
  /** Where sandbox homes live (`<stateDir>/<statePrefix>…`): sandbox-writable. */
  readonly stateDir: string;
  readonly statePrefix: string;
  /** Named state (`--state`): sandbox-writable homes. */
  readonly stateRoot?: string;
  /** The user's home and the hidden roots: the cache must not contain any of them. */
  readonly hidden: readonly string[];
  /** Host paths this session mounts read-write: its sandbox may write there. */
  readonly writable?: readonly string[];
}

export type CacheCheck =
  | { readonly ok: true; readonly cache: UserNpmCache }
  | {
      readonly ok: false;
      readonly reason: string;
      /** Nothing is wrong (no cache yet): not worth a note. */
      readonly quiet?: boolean;
    };

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Accepts `path` when it is absolute and normal, an existing real directory (no symlink in any
 * component), owned by the uid the install writes as and writable by no one else, and apart
 * from every tree a sandbox can write or the host keeps its own state in. The reason of a
 * refusal names only what the user configured.
 */
export function checkUserNpmCache(configured: string | undefined, places: CachePlaces): CacheCheck {
  const no = (reason: string): CacheCheck => ({ ok: false, reason });
  if (configured === undefined || configured === '') {
    return { ok: false, reason: 'npm names no cache directory', quiet: true };
  }
  // `~/.npm/` names the same directory as `~/.npm`; nothing else is rewritten.
  const path = configured.length > 1 && configured.endsWith('/') ? configured.slice(0, -1) : configured;
  if (!isAbsolute(path) || normalize(path) !== path || path.length > 4096 || path.includes('\0')) {
    return no(`npm's cache path ${JSON.stringify(path)} is not a plain absolute path`);
  }
  const shown = JSON.stringify(path);
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(path);
  } catch {
    return { ok: false, reason: `npm's cache ${shown} does not exist yet`, quiet: true };
  }
  if (stat.isSymbolicLink()) return no(`npm's cache ${shown} is a symlink`);
  if (!stat.isDirectory()) return no(`npm's cache ${shown} is not a directory`);
  if (realOrSelf(path) !== path) return no(`npm's cache ${shown} lies behind a symlink`);
  // As root, root's own cache: installs write as another uid, so the host seeds from it.
  const me = process.getuid?.() ?? 0;
  const readOnly = stat.uid === me && places.ownerUid !== me;
  if (stat.uid !== places.ownerUid && !readOnly) {
    return no(
      `npm's cache ${shown} is owned by uid ${stat.uid}, not by uid ${places.ownerUid} that installs write as`,
    );
  }
  if ((stat.mode & 0o022) !== 0) return no(`npm's cache ${shown} is writable by other users`);
  const parent = foreignAncestor(path);
  if (parent !== undefined)
    return no(`npm's cache ${shown} lies in ${JSON.stringify(parent)}, which others may change`);
  for (const mount of places.writable ?? []) {
    const real = realOrSelf(mount);
    if (isInside(path, real) || isInside(real, path)) {
      return no(
        `npm's cache ${shown} overlaps ${JSON.stringify(mount)}, which this session's server may write`,
      );
    }
  }
  const overlaps = (place: string) => isInside(path, place) || isInside(place, path);
  const install = realOrSelf(places.installCacheRoot);
  if (overlaps(install)) return no(`npm's cache ${shown} overlaps mcp-sandbox's install cache`);
  if (places.stateRoot !== undefined && overlaps(realOrSelf(places.stateRoot))) {
    return no(`npm's cache ${shown} overlaps the servers' named state`);
  }
  const stateDir = realOrSelf(places.stateDir);
  const inSandboxState =
    isInside(path, stateDir) &&
    path.slice(stateDir.length).split('/').filter(Boolean)[0]?.startsWith(places.statePrefix) === true;
  if (inSandboxState || isInside(stateDir, path)) {
    return no(`npm's cache ${shown} overlaps the sandboxes' state directory`);
  }
  for (const hidden of places.hidden) {
    if (isInside(realOrSelf(hidden), path)) return no(`npm's cache ${shown} contains ${hidden}`);
  }
  return { ok: true, cache: { path, readOnly } as UserNpmCache };
}

/**
 * The first directory above `path` that someone other than root or this process's user owns,
 * or that others may write without the sticky bit: whoever controls it can put any folder in
 * the cache's place. As root the cache itself belongs to the sandbox's uid, so its owner alone
 * proves nothing: a server given a folder read-write makes folders of that uid there.
 */
function foreignAncestor(path: string): string | undefined {
  const me = process.getuid?.() ?? 0;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(dir);
    } catch {
      return dir;
    }
    const sticky = (stat.mode & 0o1000) !== 0;
    if ((stat.uid !== 0 && stat.uid !== me) || ((stat.mode & 0o022) !== 0 && !sticky)) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/** npm's own default when it cannot be asked: `~/.npm`. */
export function defaultUserNpmCache(home: string): string {
  return join(home, '.npm');
}
