import { access, constants } from 'node:fs/promises';
import { posix, resolve, win32 } from 'node:path';
import { UsageError } from '@mcpsandbox/core';
import type { LocateContext } from '../config/clients.js';
import { checkLauncher, type SelfBinary, selfLauncher } from '../config/launcher.js';
import { WRAP_MARKER } from '../config/marker.js';
import { parseWrapped } from '../config/servers.js';

/** The launcher wrap writes, and what to tell the user about it. */
export interface ResolvedLauncher {
  readonly launcher: readonly string[];
  readonly note?: string;
}

/**
 * What starts mcp-sandbox in the client's config. `auto` (the default) is the published package
 * when this binary is that package (`npx -y mcp-sandbox@<version>`), and else this binary by its
 * absolute path: a source build's version is not on npm, and an entry naming it would not start.
 */
export async function resolveLauncher(
  launcher: string,
  version: string,
  ctx: LocateContext,
  self?: SelfBinary,
): Promise<ResolvedLauncher> {
  if (launcher === 'auto') {
    if (!self) return { launcher: ['npx', '-y', `mcp-sandbox@${version}`] };
    return selfLauncher(self, version);
  }
  if (launcher === 'npx') return { launcher: ['npx', '-y', `mcp-sandbox@${version}`] };
  if (launcher === 'path') {
    const found = await findOnPath('mcp-sandbox', ctx);
    if (!found) {
      throw new UsageError(
        '--launcher path: no mcp-sandbox on PATH; install it (npm install -g mcp-sandbox) or give its path',
      );
    }
    return checked([found], ctx, '--launcher path');
  }
  // Any executable: a global install, a local build's dist/bin.js. The client starts it from a
  // folder of its own, so the entry gets the absolute path.
  const path = ctx.platform === 'win32' ? win32 : posix;
  const file = path.isAbsolute(launcher) ? launcher : path.resolve(ctx.cwd, launcher);
  try {
    await access(file, ctx.platform === 'win32' ? constants.F_OK : constants.X_OK);
  } catch {
    throw new UsageError(
      `--launcher ${launcher}: ${file} is not an executable file; give npx, path, or the path of an mcp-sandbox binary`,
    );
  }
  return checked([file], ctx, `--launcher ${launcher}`);
}

/** A launcher wrap writes must be one `ls` will recognise as mcp-sandbox. */
function checked(words: readonly string[], ctx: LocateContext, what: string): ResolvedLauncher {
  if (!checkLauncher(words, { env: ctx.env })) {
    throw new UsageError(
      `${what}: ${words.join(' ')} is not the mcp-sandbox bin of an installed or built mcp-sandbox package; give npx, path, or the path of its dist/bin.js`,
    );
  }
  return { launcher: words };
}

/** Launchers not known by name get the marker after `run`, so that ls and unwrap find the entry. */
export function markerFor(launcher: readonly string[]): readonly string[] {
  const [command = '', ...args] = launcher;
  return parseWrapped(command, [...args, 'run', '--', 'server']) ? [] : [WRAP_MARKER];
}

async function findOnPath(name: string, ctx: LocateContext): Promise<string | undefined> {
  const win = ctx.platform === 'win32';
  const path = win ? win32 : posix;
  const dirs = (ctx.env.PATH ?? ctx.env.Path ?? '')
    .split(win ? win32.delimiter : posix.delimiter)
    .filter(Boolean);
  const exts = win ? (ctx.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext.toLowerCase());
      try {
        await access(candidate, win ? constants.F_OK : constants.X_OK);
        return path.isAbsolute(candidate) ? candidate : resolve(ctx.cwd, candidate);
      } catch {
        // next
      }
    }
  }
  return undefined;
}
