/** The directories of `--setup` steps: their npm prefix, and with `--state` a home of their own. */
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** Where setup steps' `npm install -g` lands inside the sandbox (under the hidden, empty /run). */
export const SETUP_PREFIX = '/run/mcp-sandbox/setup';

export interface SetupDirs {
  readonly prefix: string;
  readonly home: string;
}

/**
 * The setup steps' own directories, made on the first step: the npm prefix (`npm install -g`
 * lands there; its `bin` is on every later command's PATH) and, with `--state`, a home of
 * their own. A state home was written by earlier sessions' servers (an `npm` planted on PATH,
 * an `.npmrc` that npm obeys), so setup steps never run in it; without `--state` the session's
 * home is new and, since no server has started yet, holds only what earlier setup steps wrote.
 */
export function makeSetupDirs(
  root: string,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
  session: { readonly persistent: boolean; readonly home: string },
): SetupDirs {
  const base = join(root, 'setup');
  mkdirSync(base, { mode: runAs ? 0o711 : 0o700 });
  const own = (dir: string): string => {
    mkdirSync(dir, { mode: 0o700 });
    if (runAs) chownSync(dir, runAs.uid, runAs.gid);
    return dir;
  };
  return {
    prefix: own(join(base, 'npm')),
    home: session.persistent ? own(join(base, 'home')) : session.home,
  };
}
