import { type PinnedSpec, type PrepareOptions, SandboxFailureError } from '@mcpsandbox/core';
import type { OpenDir } from '../host-fs.js';
import type { StartedWorker } from '../install-job.js';
import { awaitInstallWorker } from '../install-wait.js';
import { type Installed, readEntry } from './entries.js';
import type { HostNpmConfig } from './npm-config.js';

/**
 * The install in a detached worker: its output is shown while this start waits; if this start
 * is abandoned (the signal fires), the worker goes on alone and the next start is warm.
 */
export async function installInBackground(
  root: OpenDir,
  key: string,
  pinned: PinnedSpec,
  registry: string,
  npmConfig: HostNpmConfig,
  options: PrepareOptions,
  start: (pinned: PinnedSpec, registry: string, npmConfig: HostNpmConfig) => StartedWorker,
  say: (text: string) => void,
): Promise<Installed> {
  await awaitInstallWorker(start(pinned, registry, npmConfig), options, say);
  const installed = readEntry(root, key);
  if (!installed) {
    throw new SandboxFailureError(
      `the install of ${pinned.spec} ended, but its cache entry is not complete`,
      {
        code: 'E_PREPARE',
      },
    );
  }
  return installed;
}
