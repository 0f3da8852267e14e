import { type OpenDir, removeAt } from '../host-fs.js';

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

/**
 * Removes the install's cache from the prefix once no step runs any more: whatever the steps
 * (an sdist's build code among them) made of it, links and FIFOs are unlinked, never followed
 * or opened, and nothing on another file system is entered. Files of the environment linked
 * to it keep their data and are left with one link each.
 */
export function dropStepCache(prefix: OpenDir): void {
  removeAt(prefix, STEP_CACHE);
}
