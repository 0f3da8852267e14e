import {
  escapeControls,
  PinChangedError,
  type PinnedSpec,
  type PrepareOptions,
  SandboxFailureError,
  SetupFailedError,
} from '@mcpsandbox/core';
import type { OpenDir } from '../host-fs.js';
import type { StartedWorker } from '../install-job.js';
import { type Installed, readEntry } from './entries.js';
import type { HostNpmConfig } from './npm-config.js';
import { InstallQuotaError } from './quota.js';

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
  const { spec } = pinned;
  const worker = start(pinned, registry, npmConfig);
  const forward = (async () => {
    try {
      for await (const chunk of worker.stderr) options.stderr(chunk);
    } catch {
      // detached
    }
  })();
  const aborted = new Promise<'aborted'>((resolve) => {
    if (options.signal?.aborted) resolve('aborted');
    options.signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  const result = await Promise.race([worker.result, aborted]);
  if (result === 'aborted') {
    worker.detach();
    options.signal?.throwIfAborted();
    throw new SandboxFailureError('the start was abandoned', { code: 'E_PREPARE' });
  }
  await forward;
  // The worker's own words, passed on where this start's user sees them (bounded, escaped).
  for (const note of Array.isArray(result.notes) ? result.notes.slice(0, 32) : []) {
    if (typeof note === 'string') say(escapeControls(note.slice(0, 500)));
  }
  if (!result.ok) {
    if (result.code === 'E_SETUP_FAILED') throw new SetupFailedError(result.message, result.exitCode ?? null);
    if (result.code === 'E_PIN_CHANGED') throw new PinChangedError(result.message);
    if (result.code === 'E_INSTALL_QUOTA') throw new InstallQuotaError(result.message);
    throw new SandboxFailureError(result.message, { code: 'E_PREPARE' });
  }
  const installed = readEntry(root, key);
  if (!installed) {
    throw new SandboxFailureError(`the install of ${spec} ended, but its cache entry is not complete`, {
      code: 'E_PREPARE',
    });
  }
  return installed;
}
