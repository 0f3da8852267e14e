import { execFile } from 'node:child_process';
import { BackendUnavailableError } from '@mcpsandbox/core';
import { SEATBELT_FACTS } from './backend.js';

export interface SeatbeltProbe {
  readonly engine: string;
  /** macOS's product version (the engine is the OS's). */
  readonly version: string;
  readonly gaps: string;
}

function run(file: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 10_000, encoding: 'utf8' }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    );
  });
}

/**
 * Is Seatbelt usable here: macOS, and `sandbox-exec` runs a trivial profile that denies a read
 * (so a machine where profiles do not apply is not taken for one where they do).
 */
export async function probeSeatbelt(platform: NodeJS.Platform = process.platform): Promise<SeatbeltProbe> {
  if (platform !== 'darwin') {
    throw new BackendUnavailableError(`Seatbelt is macOS's sandbox; this is ${platform}`, {
      code: 'E_SEATBELT_UNAVAILABLE',
    });
  }
  try {
    await run('/usr/bin/sandbox-exec', [
      '-p',
      '(version 1)(allow default)(deny file-read-data (literal "/private/etc/hosts"))',
      '--',
      '/bin/cat',
      '/private/etc/hosts',
    ]);
  } catch (error) {
    // cat must fail (the profile denies the read); sandbox-exec itself failing to start is another story.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new BackendUnavailableError('/usr/bin/sandbox-exec is missing', {
        code: 'E_SEATBELT_UNAVAILABLE',
        cause: error,
      });
    }
    const version = (await run('/usr/bin/sw_vers', ['-productVersion']).catch(() => 'unknown')).trim();
    return { engine: SEATBELT_FACTS.engine, version: `macOS ${version}`, gaps: SEATBELT_FACTS.gaps };
  }
  throw new BackendUnavailableError(
    'sandbox-exec ran a profile that denies a read and the read succeeded: Seatbelt is not enforcing here',
    {
      code: 'E_SEATBELT_NOT_ENFORCING',
    },
  );
}
