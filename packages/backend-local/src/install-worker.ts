/**
 * The npx install of a first start, in a process of its own: started detached (its own session)
 * by the start that needs it, so that a client that gives up (stdin EOF, SIGTERM, SIGKILL of
 * the bridge) does not throw the install away. It runs the install step and nothing of the
 * server, within a deadline, marks the cache entry complete (one rename, as in-process
 * installs do) and exits; the next start finds the entry warm.
 *
 * Job on stdin (one JSON object: the values may be secrets, so never on the command line);
 * result on stdout (one JSON line); npm's output on stderr.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Logger, SandboxError, silentLogger } from '@mcpsandbox/core';

/** How long a background install may take in all, whoever waits for it. */
export const INSTALL_DEADLINE_MS = 10 * 60_000;
const MAX_JOB_BYTES = 1024 * 1024;
const MAX_RESULT_BYTES = 64 * 1024;

export interface InstallJob {
  /** The exact spec to install (already pinned by the start that asked). */
  readonly spec: string;
  readonly cacheRoot: string;
  readonly registry: string;
  readonly installHosts: readonly string[];
  readonly installEnv: Readonly<Record<string, string>>;
  /** Whether the fetch may use the user's npm cache, and the places it must keep clear of. */
  readonly userCache: boolean;
  readonly stateDir: string;
  readonly stateRoot?: string;
  readonly runAsWhenRoot?: { readonly uid: number; readonly gid: number };
  readonly deadlineMs: number;
}

export type InstallResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly message: string; readonly code: string; readonly exitCode?: number };

/** The worker's entry file; absent when running from source (tests), where installs stay in-process. */
export function installWorkerPath(): string | undefined {
  const path = fileURLToPath(new URL('./install-worker.js', import.meta.url));
  return existsSync(path) ? path : undefined;
}

export interface StartedWorker {
  readonly stderr: AsyncIterable<Uint8Array>;
  /** The result the worker printed, or a failure if it died without one. */
  readonly result: Promise<InstallResult>;
  /** Stop listening: the worker goes on alone, within its own deadline. */
  detach(): void;
}

/** Starts the worker, detached from this process's session and lifetime. */
export function startInstallWorker(
  path: string,
  job: InstallJob,
  hostEnv: Readonly<Record<string, string | undefined>>,
): StartedWorker {
  const child = spawn(process.execPath, [path], {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...hostEnv },
  });
  child.stdin.on('error', () => {});
  child.stdin.end(JSON.stringify(job));
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    if (out.length < MAX_RESULT_BYTES) out += chunk.toString('utf8');
  });
  const result = new Promise<InstallResult>((resolve) => {
    child.on('error', (error) =>
      resolve({ ok: false, code: 'E_PREPARE', message: `could not start the install: ${error.message}` }),
    );
    child.on('close', (code, signal) => {
      resolve(
        parseResult(out) ?? {
          ok: false,
          code: 'E_PREPARE',
          message: `the install process ended without a result (${code ?? signal})`,
        },
      );
    });
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
    if (value.ok === true) return { ok: true };
    if (value.ok === false && typeof value.message === 'string' && typeof value.code === 'string') {
      return {
        ok: false,
        message: value.message,
        code: value.code,
        ...(typeof value.exitCode === 'number' ? { exitCode: value.exitCode } : {}),
      };
    }
  } catch {
    // not a result
  }
  return undefined;
}

async function readJob(): Promise<InstallJob> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.length > MAX_JOB_BYTES) throw new Error('install job too large');
  }
  return JSON.parse(text) as InstallJob;
}

/** The worker itself: install, print the result, exit; never longer than the job's deadline. */
export async function runInstallWorker(): Promise<void> {
  // The start that asked may be gone: writing to its pipes must not end the install.
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  process.on('SIGHUP', () => {});
  process.on('SIGPIPE', () => {});
  const job = await readJob();
  // Bounded whatever hangs: the sandbox's processes die with this one (--die-with-parent).
  setTimeout(() => process.exit(124), job.deadlineMs + 15_000).unref();
  const finish = (result: InstallResult) => {
    process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(result.ok ? 0 : 1));
  };
  try {
    const { createLocalBackend } = await import('./local.js');
    const logger: Logger = { ...silentLogger, warn: () => {}, error: () => {} };
    const backend = createLocalBackend({
      hostEnv: process.env,
      logger,
      npmCacheDir: job.cacheRoot,
      npmRegistry: job.registry,
      installEnv: job.installEnv,
      inlineInstall: true,
      ...(job.runAsWhenRoot ? { runAsWhenRoot: job.runAsWhenRoot } : {}),
      stateDir: job.stateDir,
      settings: {
        ...(job.installHosts.length > 0 ? { installAllowNet: job.installHosts.join(',') } : {}),
        ...(job.userCache ? {} : { npmUserCache: 'off' }),
        ...(job.stateRoot ? { stateRoot: job.stateRoot } : {}),
      },
    });
    const sandbox = await backend.create({ sessionId: 'install', env: {}, ttlMs: job.deadlineMs });
    try {
      await sandbox.prepare?.(['npx', '-y', job.spec], {
        stderr: (chunk) => process.stderr.write(chunk),
        signal: AbortSignal.timeout(job.deadlineMs),
      });
    } finally {
      await sandbox.close();
    }
    finish({ ok: true });
  } catch (error) {
    const err = error as { message?: unknown; exitCode?: unknown };
    finish({
      ok: false,
      message: typeof err.message === 'string' ? err.message : String(error),
      code: error instanceof SandboxError ? error.code : 'E_PREPARE',
      ...(typeof err.exitCode === 'number' ? { exitCode: err.exitCode } : {}),
    });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void runInstallWorker();
