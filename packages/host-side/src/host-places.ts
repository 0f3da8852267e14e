import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { type MountSpec, UsageError } from '@mcpsandbox/core';
import { isInside } from './view.js';

/** The prefix of each sandbox's own directory under the host's state directory. */
export const STATE_PREFIX = 'mcp-sandbox-';

/**
 * `$XDG_CACHE_HOME/mcp-sandbox/npm`, or `~/.cache/…` (hidden from every sandbox). As root
 * without the tools to bind from root's 0700 home, the cache lives in /var/cache instead.
 */
export function defaultNpmCache(
  hostEnv: Readonly<Record<string, string | undefined>>,
  home: string,
  runsAsOther: boolean,
): string {
  if (hostEnv.XDG_CACHE_HOME) return join(hostEnv.XDG_CACHE_HOME, 'mcp-sandbox', 'npm');
  if (runsAsOther) return '/var/cache/mcp-sandbox/npm';
  return join(home, '.cache', 'mcp-sandbox', 'npm');
}

/**
 * A writable mount must not reach the host's own bookkeeping: the sandboxes' state directories
 * (every sandbox's home) and the install cache hold what the host later reads, renames and
 * removes. Refused: a mount that contains either, or lies inside the cache or a state directory.
 */
export function checkMountsSpareHostState(
  mounts: readonly MountSpec[],
  places: { readonly stateDir: string; readonly cacheRoot: string; readonly stateRoot?: string },
): void {
  const real = realOrSelf;
  const stateDir = real(places.stateDir);
  const cacheRoot = real(places.cacheRoot);
  const stateRoot = places.stateRoot === undefined ? undefined : real(places.stateRoot);
  for (const mount of mounts) {
    if (mount.mode !== 'rw') continue;
    const source = real(mount.hostPath);
    const inState =
      isInside(source, stateDir) &&
      source.slice(stateDir.length).split('/').filter(Boolean)[0]?.startsWith(STATE_PREFIX) === true;
    const what =
      isInside(cacheRoot, source) || isInside(source, cacheRoot)
        ? `the install cache (${cacheRoot})`
        : isInside(stateDir, source) || inState
          ? `the sandboxes' state directory (${stateDir})`
          : stateRoot !== undefined && (isInside(stateRoot, source) || isInside(source, stateRoot))
            ? `the servers' named state (${stateRoot})`
            : undefined;
    if (what) {
      throw new UsageError(
        `cannot mount ${mount.hostPath} read-write: it overlaps ${what}, which only mcp-sandbox may change; ` +
          'mount it read-only or choose another directory',
      );
    }
  }
}

export function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
