import { renameSync } from 'node:fs';
import { at, HostFsError, type OpenDir, removeBelowOwned } from '../host-fs.js';

/**
 * uv's cache for one install: a directory inside the staging prefix the install's steps already
 * write, so what the resolution fetched and built is not fetched again by the install, and the
 * install links files out of it rather than writing each twice. It is never the user's cache and
 * never shared between installs: the host removes it before the environment is sealed.
 */
export const STEP_CACHE = '.uv-cache';

/** uv's settings for the steps: the cache inside the prefix, files hard-linked out of it. */
export function stepCacheEnv(inside: string): Record<string, string> {
  return { UV_CACHE_DIR: `${inside}/${STEP_CACHE}`, UV_LINK_MODE: 'hardlink' };
}

/** Where the cache goes once the steps are done: beside the environment, never inside it. */
export const SET_ASIDE = 'dropped-uv-cache';

/**
 * Moves the install's cache out of the prefix once no step runs any more, in one rename that
 * follows nothing (a link planted in its place moves as a link), into the staging directory the
 * sandbox never saw: the environment is sealed and published without it, and it is removed
 * after (see {@link removeSetAside}), while the server starts. Nothing there is ever bound into
 * a sandbox.
 */
export function setStepCacheAside(prefix: OpenDir, staging: OpenDir): void {
  try {
    renameSync(at(prefix.fd, STEP_CACHE), at(staging.fd, SET_ASIDE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new HostFsError('cannot move the install cache out of the environment', error);
  }
}

/**
 * Removes what {@link setStepCacheAside} put beside the published entry `key` of `uvCacheRoot`:
 * whatever the steps (an sdist's build code among them) made of it, links and FIFOs are
 * unlinked, never followed or opened, and nothing on another file system is entered; files of
 * the environment linked to it keep their data and are left with one link each. Best effort:
 * another start may be removing it too.
 */
export function removeSetAside(uvCacheRoot: string, key: string): void {
  removeBelowOwned(uvCacheRoot, [key, SET_ASIDE]);
}
