/** The argv bwrap executes inside the sandbox: limits, a clean environment, and the server's package copy. */
import type { PackageCopy } from '../install/prepare.js';
import type { SandboxConfig } from './config.js';

/**
 * The server's start with its package copy first (install/prepare.ts): positional parameters
 * only; a copy that fails ends the start with the sandbox-failure code, saying so.
 */
const COPY_THEN_EXEC =
  'cp -R -P --preserve=mode,timestamps "$1/." "$2/" || { s=$?; ' +
  'echo "could not make the server\'s package writable (cp exited $s)" >&2; exit 125; }; ' +
  'shift 2; unset PWD; exec "$@"';

/**
 * Limits and a clean environment around `command`. An install step's files can be no larger
 * than its entry's byte quota (RLIMIT_FSIZE): one file cannot outgrow the quota between two
 * counts of the host's watch (host-side npx/watchdog.ts).
 */
export function launcherArgv(
  config: Pick<SandboxConfig, 'info' | 'limits' | 'installFileSize'>,
  command: readonly string[],
  copy: PackageCopy | undefined,
  install: boolean,
): string[] {
  const { info, limits, installFileSize } = config;
  const prlimitArgs = [...limits.prlimitArgs];
  if (install) prlimitArgs.push(`--fsize=${installFileSize}:${installFileSize}`);
  const limited =
    info.prlimitPath && prlimitArgs.length > 0
      ? [info.prlimitPath, ...prlimitArgs, '--', ...command]
      : [...command];
  // bwrap sets PWD; the environment is the allowlist and nothing else.
  if (!copy) return ['/bin/sh', '-c', 'unset PWD; exec "$@"', 'sh', ...limited];
  return ['/bin/sh', '-c', COPY_THEN_EXEC, 'sh', copy.from, copy.to, ...limited];
}
