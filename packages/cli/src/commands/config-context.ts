import { platform as osPlatform } from 'node:os';
import type { LocateContext } from '../config/clients.js';
import type { CliOptions } from '../options.js';

/** Exit code when a config file is invalid, missing, or changed under us: nothing was written. */
export const CONFIG_ERROR_EXIT = 1;

export function locateContext(options: CliOptions): LocateContext {
  // The OS decides where clients keep their configs; tests point HOME and friends at temp dirs.
  return { platform: osPlatform(), env: options.io.env, cwd: options.io.cwd };
}
