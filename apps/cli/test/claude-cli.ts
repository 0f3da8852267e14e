/** Claude Code's CLI in a private home: no account is needed for `claude mcp add` and `mcp list`. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const CLAUDE = fileURLToPath(new URL('../node_modules/.bin/claude', import.meta.url));

/**
 * A `claude` runner with `home` as its home and config, plus `extra` variables: it resolves with
 * stdout, or with everything it printed and the error when it exits non-zero.
 */
export function claudeIn(home: string, extra: Readonly<Record<string, string>> = {}) {
  const env = {
    ...extra,
    PATH: process.env.PATH ?? '',
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    XDG_CONFIG_HOME: join(home, '.config'),
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
  return (args: string[]) =>
    promisify(execFile)(CLAUDE, args, { env, cwd: home, timeout: 100_000 }).then(
      ({ stdout }) => stdout,
      (error: { stdout?: string; stderr?: string; message: string }) =>
        `${error.stdout ?? ''}${error.stderr ?? ''}${error.message}`,
    );
}
