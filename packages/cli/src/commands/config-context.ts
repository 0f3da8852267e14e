import { platform as osPlatform } from 'node:os';
import type { Logger } from '@mcpsandbox/core';
import type { LocateContext } from '../config/clients.js';
import { ConfigFileError } from '../config/files.js';
import type { VerdictContext } from '../config/run-verdict.js';
import type { CliOptions } from '../options.js';
import { reportError } from '../report.js';

/** Exit code when a config file is invalid, missing, or changed under us: nothing was written. */
export const CONFIG_ERROR_EXIT = 1;

export function locateContext(options: CliOptions): LocateContext {
  // The OS decides where clients keep their configs; tests point HOME and friends at temp dirs.
  return { platform: options.platform ?? osPlatform(), env: options.io.env, cwd: options.io.cwd };
}

/** What config entries are judged against: this binary's backends and the user's environment. */
export function verdictContext(options: CliOptions): VerdictContext {
  return { backends: options.backends, defaultBackend: options.defaultBackend, env: options.io.env };
}

/** The one line for a failure of wrap, unwrap or ls; a config file's own error says nothing was written. */
export function reportConfigError(error: unknown, logger: Logger): number {
  if (error instanceof ConfigFileError) {
    logger.error(`${error.message}${error.code === 'E_CONFIG_MISSING' ? '' : '; the file was not changed'}`);
    return CONFIG_ERROR_EXIT;
  }
  return reportError(error, logger);
}
