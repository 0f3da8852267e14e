import { homedir } from 'node:os';
import type { InstallCacheView } from '@mcpsandbox/cli';
import { defaultNpmCache, installCacheStatus } from '@mcpsandbox/host-side';

/**
 * The local engine's install cache where it is by default (as root it may be either place, by
 * whether root's home can be bound): the first one that exists.
 */
export function localInstallCache(
  env: Readonly<Record<string, string | undefined>>,
): InstallCacheView | undefined {
  const home = env.HOME ?? homedir();
  const places = [defaultNpmCache(env, home, false)];
  if (process.getuid?.() === 0) places.push(defaultNpmCache(env, home, true));
  for (const root of places) {
    const status = installCacheStatus(root);
    if (status) return status;
  }
  return undefined;
}
