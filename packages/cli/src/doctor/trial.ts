import { randomUUID } from 'node:crypto';
import { type SandboxBackend, SandboxFailureError } from '@mcpsandbox/core';
import type { BackendStatus } from './types.js';

const TOKEN = 'mcp-sandbox-doctor';

/**
 * A backend's end-to-end probe: create a sandbox, run `command` (a program that echoes its stdin,
 * such as the conformance probe's `echo` mode), send one line and expect it back, then close.
 * Nothing of the host crosses: an empty environment, no mounts, no network.
 */
export async function echoTrial(
  backend: SandboxBackend,
  command: readonly string[],
  timeoutMs = 30_000,
): Promise<BackendStatus> {
  const started = performance.now();
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  timer.unref();
  const sandbox = await backend.create(
    { sessionId: `doctor-${randomUUID()}`, env: {}, ttlMs: timeoutMs + 5_000 },
    { signal: abort.signal },
  );
  try {
    const proc = await sandbox.exec(command);
    await proc.write(Buffer.from(`${TOKEN}\n`));
    await proc.closeStdin();
    const chunks: Buffer[] = [];
    const collected = (async () => {
      for await (const chunk of proc.stdout) chunks.push(Buffer.from(chunk));
    })();
    const finished = await Promise.race([
      Promise.all([collected, proc.exit]).then(([, status]) => status),
      new Promise<undefined>((resolve) => abort.signal.addEventListener('abort', () => resolve(undefined))),
    ]);
    if (!finished) {
      await proc.kill('SIGKILL').catch(() => undefined);
      throw new SandboxFailureError(`the trial program did not finish within ${timeoutMs / 1000} s`);
    }
    const echoed = Buffer.concat(chunks).toString('utf8').trim();
    if (finished.code !== 0 || echoed !== TOKEN) {
      throw new SandboxFailureError(
        `the trial program ended with ${finished.signal ?? `code ${finished.code}`} and did not echo its input`,
      );
    }
    const ms = Math.round(performance.now() - started);
    return { usable: true, summary: `ran a trial program (${ms} ms): ${backend.describe?.() ?? backend.id}` };
  } finally {
    clearTimeout(timer);
    await sandbox.close();
  }
}
