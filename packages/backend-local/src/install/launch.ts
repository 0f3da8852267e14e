/**
 * Starts the background install worker (`install-worker.ts`, its own detached process) and reads
 * its one-line result back. Kept apart from the worker, which loads the whole backend.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { InstallJob, InstallResult, StartedWorker } from '@mcpsandbox/host-side';

/** How long a background install may take in all, whoever waits for it. */
export const INSTALL_DEADLINE_MS = 10 * 60_000;
const MAX_RESULT_BYTES = 64 * 1024;

/** The worker's entry file; absent when running from source (tests), where installs stay in-process. */
export function installWorkerPath(): string | undefined {
  const path = fileURLToPath(new URL('./install-worker.js', import.meta.url));
  return existsSync(path) ? path : undefined;
}

/**
 * A worker process started before its job is known: it loads its modules while the start still
 * pins the package. `start` hands it the job (once); `cancel` ends it unused (stdin closed empty,
 * which it takes as "nothing to do"), as does this process ending first.
 */
export interface EarlyWorker {
  start(job: InstallJob): StartedWorker;
  cancel(): void;
}

/** Starts the worker's process, detached from this process's session and lifetime; no job yet. */
export function spawnInstallWorker(
  path: string,
  hostEnv: Readonly<Record<string, string | undefined>>,
): EarlyWorker {
  const child = spawn(process.execPath, [path], {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...hostEnv },
  });
  child.stdin.on('error', () => {});
  // Taken now: the process may fail to start, or end, before it is given its job.
  const ended = new Promise<Ended>((resolve) => {
    child.on('error', (error) => resolve({ error }));
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  let given = false;
  return {
    start: (job) => {
      if (given) throw new Error('the install worker was given its job already');
      given = true;
      child.stdin.end(JSON.stringify(job));
      return listen(child, ended);
    },
    cancel: () => {
      if (given) return;
      given = true;
      child.stdin.end();
      child.stdout.destroy();
      child.stderr.destroy();
      child.unref();
    },
  };
}

/** Starts the worker with its job. */
export function startInstallWorker(
  path: string,
  job: InstallJob,
  hostEnv: Readonly<Record<string, string | undefined>>,
): StartedWorker {
  return spawnInstallWorker(path, hostEnv).start(job);
}

type Ended = { readonly error: Error } | { readonly code: number | null; readonly signal: string | null };

function listen(child: ChildProcessWithoutNullStreams, ended: Promise<Ended>): StartedWorker {
  let out = '';
  let answered: ((result: InstallResult) => void) | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    if (out.length < MAX_RESULT_BYTES) out += chunk.toString('utf8');
    // The result is one line, written before the worker tidies up: taken as soon as it is whole.
    const said = out.includes('\n') ? parseResult(out) : undefined;
    if (said) answered?.(said);
  });
  const result = new Promise<InstallResult>((resolve) => {
    answered = resolve;
    void ended.then((end) =>
      resolve(
        'error' in end
          ? { ok: false, code: 'E_PREPARE', message: `could not start the install: ${end.error.message}` }
          : (parseResult(out) ?? {
              ok: false,
              code: 'E_PREPARE',
              message: `the install process ended without a result (${end.code ?? end.signal})`,
            }),
      ),
    );
  });
  return {
    stderr: child.stderr,
    result,
    detach: () => {
      child.stdout.destroy();
      child.stderr.destroy();
      child.unref();
    },
  };
}

function parseResult(text: string): InstallResult | undefined {
  try {
    const value = JSON.parse(text.trim().split('\n').pop() ?? '') as Record<string, unknown>;
    const notes = Array.isArray(value.notes)
      ? value.notes.filter((note): note is string => typeof note === 'string').slice(0, 32)
      : [];
    const told = notes.length > 0 ? { notes } : {};
    if (value.ok === true) return { ok: true, ...told };
    if (value.ok === false && typeof value.message === 'string' && typeof value.code === 'string') {
      return {
        ok: false,
        message: value.message,
        code: value.code,
        ...(typeof value.exitCode === 'number' ? { exitCode: value.exitCode } : {}),
        ...told,
      };
    }
  } catch {
    // not a result
  }
  return undefined;
}
