import { type ExitStatus, PendingBytes, SandboxFailureError } from '@mcpsandbox/core';
import { type EnvdClient, EnvdError } from './envd.js';
import { E2B_ERROR_CODES } from './errors.js';
import { toExitStatus } from './exit-status.js';

export interface HelperOptions {
  /** envd kills the helper after this long; the host gives up shortly after. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Positional parameters: `$0`, `$1`, … of the script. */
  readonly args?: readonly string[];
  /** Receives stderr (default: discarded). */
  readonly onStderr?: (chunk: Uint8Array) => void;
  /** Receives stdout (default: discarded). */
  readonly onStdout?: (chunk: Uint8Array) => void;
  /** How many bytes of stdout to keep in the result (default: none). */
  readonly keepStdout?: number;
  /** Called with the helper's pid once envd started it. */
  readonly onStart?: (pid: number) => void;
}

export interface HelperResult {
  readonly status: ExitStatus;
  /** At most `keepStdout` bytes of what the helper printed. */
  readonly stdout: string;
}

/**
 * Runs a short script of this backend's own in the VM (`kill`, `chmod`, the install launcher).
 * `bash --noprofile --norc` with an empty environment: a `~/.bash_profile` the server planted does
 * not run with it. Its stream is read through the capped envd client and its output is dropped
 * unless asked for, so a flood costs time, never memory.
 */
export async function runHelper(
  envd: EnvdClient,
  script: string,
  options: HelperOptions,
): Promise<HelperResult> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (options.signal?.aborted) abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  const timer = setTimeout(abort, options.timeoutMs + 5_000);
  const keep = options.keepStdout ?? 0;
  const kept = new PendingBytes();
  try {
    const events = envd.start(
      { cmd: '/bin/bash', args: ['--noprofile', '--norc', '-c', script, ...(options.args ?? [])], envs: {} },
      { stdin: false, signal: controller.signal, timeoutMs: options.timeoutMs },
    );
    for await (const event of events) {
      if (event.type === 'start') options.onStart?.(event.pid);
      else if (event.type === 'data') {
        if (event.stream === 'stderr') options.onStderr?.(event.data);
        else options.onStdout?.(event.data);
        if (event.stream === 'stdout' && kept.length < keep) {
          kept.append(Buffer.from(event.data).subarray(0, keep - kept.length));
        }
      } else if (event.type === 'end') {
        return { status: toExitStatus(event), stdout: kept.takeAll().toString() };
      }
    }
    throw new SandboxFailureError('a helper command in the E2B sandbox ended without an exit status', {
      code: E2B_ERROR_CODES.streamLost,
    });
  } catch (error) {
    if (
      controller.signal.aborted &&
      !(error instanceof EnvdError && error.code === E2B_ERROR_CODES.protocol)
    ) {
      throw new EnvdError(
        options.signal?.aborted
          ? 'a helper command in the E2B sandbox was aborted'
          : `a helper command in the E2B sandbox took longer than ${options.timeoutMs} ms`,
        { code: E2B_ERROR_CODES.timeout, cause: error },
      );
    }
    throw error;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', abort);
  }
}
