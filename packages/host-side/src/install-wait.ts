import {
  escapeControls,
  PinChangedError,
  type PrepareOptions,
  SandboxFailureError,
  SetupFailedError,
} from '@mcpsandbox/core';
import type { StartedWorker } from './install-job.js';
import { InstallQuotaError } from './npx/quota.js';

/**
 * Waits for a background install worker (npm's or uv's), showing its output meanwhile. If this
 * start is abandoned (the signal fires), the worker goes on alone and the next start finds its
 * entry (or waits for it). A failure comes back as the error the worker met, by its code.
 */
export async function awaitInstallWorker(
  worker: StartedWorker,
  options: PrepareOptions,
  say: (text: string) => void,
): Promise<void> {
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
  // The worker writes its output before its result, then tidies up (and may write nothing more):
  // what is still in the pipe is taken, and then this start stops listening.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([forward, new Promise((resolve) => (timer = setTimeout(resolve, 250)))]);
  clearTimeout(timer);
  worker.detach();
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
}
