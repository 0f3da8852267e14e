/**
 * The npx (or uvx) install of a first start, in a process of its own: started detached (its own session)
 * by the start that needs it, so that a client that gives up (stdin EOF, SIGTERM, SIGKILL of
 * the bridge) does not throw the install away. It runs the install step and nothing of the
 * server, within a deadline, marks the cache entry complete (one rename, as in-process
 * installs do) and exits; the next start finds the entry warm.
 *
 * Job on stdin (one JSON object: the values may be secrets, so never on the command line);
 * result on stdout (one JSON line); npm's output on stderr.
 */
import { type Logger, type Sandbox, SandboxError, silentLogger } from '@mcpsandbox/core';
import type { InstallJob, InstallResult } from '@mcpsandbox/host-side';

const MAX_JOB_BYTES = 1024 * 1024;

/** The job, or undefined when stdin ends empty: a worker started early and not needed after all. */
async function readJob(): Promise<InstallJob | undefined> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.length > MAX_JOB_BYTES) throw new Error('install job too large');
  }
  return text.trim() === '' ? undefined : (JSON.parse(text) as InstallJob);
}

/** The worker itself: install, print the result, exit; never longer than the job's deadline. */
export async function runInstallWorker(): Promise<void> {
  // The start that asked may be gone: writing to its pipes must not end the install.
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  process.on('SIGHUP', () => {});
  process.on('SIGPIPE', () => {});
  // The backend loads while the job is awaited (a worker may be started before its job is known).
  const backend = import('../local.js');
  backend.catch(() => {});
  const job = await readJob();
  if (!job) process.exit(0);
  // Bounded whatever hangs: the sandbox's processes die with this one (--die-with-parent).
  setTimeout(() => process.exit(124), job.deadlineMs + 15_000).unref();
  // What the install says in its own words goes back with the result, for the start to show.
  const notes: string[] = [];
  // What can wait until the start has its answer (a uvx install's own cache to remove).
  const tidying: Array<() => void> = [];
  let result: InstallResult;
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await installSandbox(await backend, job, notes, (task) => tidying.push(task));
    // A uvx job's requirement and script were validated by the start that asked.
    const command = job.uvx ? ['uvx', '--from', job.uvx.requirement, job.uvx.bin] : ['npx', '-y', job.spec];
    await sandbox.prepare?.(command, {
      stderr: (chunk) => process.stderr.write(chunk),
      signal: AbortSignal.timeout(job.deadlineMs),
    });
    result = { ok: true };
  } catch (error) {
    const err = error as { message?: unknown; exitCode?: unknown };
    result = {
      ok: false,
      message: typeof err.message === 'string' ? err.message : String(error),
      code: error instanceof SandboxError ? error.code : 'E_PREPARE',
      ...(typeof err.exitCode === 'number' ? { exitCode: err.exitCode } : {}),
    };
  }
  // The answer first: the start waiting for it goes on while this process tidies up.
  const told = notes.length > 0 ? { ...result, notes } : result;
  await new Promise<void>((resolve) => process.stdout.write(`${JSON.stringify(told)}\n`, () => resolve()));
  try {
    await sandbox?.close();
  } catch {
    // its session directory is swept by a later start
  }
  for (const task of tidying) {
    try {
      task();
    } catch {
      // best effort: what is left lies beside the entry, never in it
    }
  }
  process.exit(result.ok ? 0 : 1);
}

/** The install's own sandbox: the local backend as the start that asked configured it. */
async function installSandbox(
  { createLocalBackend }: typeof import('../local.js'),
  job: InstallJob,
  notes: string[],
  deferTidying: (task: () => void) => void,
): Promise<Sandbox> {
  const logger: Logger = {
    ...silentLogger,
    // Only what the start cannot say itself (it says what it installs, and from where).
    info: (text: string) => {
      if (
        text.startsWith('skipped the optional dependency ') ||
        text.startsWith('pinned ') ||
        text.includes(": using uv's Python ")
      )
        notes.push(text);
    },
    warn: () => {},
    error: () => {},
  };
  const backend = createLocalBackend({
    hostEnv: process.env,
    logger,
    npmCacheDir: job.cacheRoot,
    npmRegistry: job.registry,
    ...(job.npmConfig ? { npmConfig: job.npmConfig } : {}),
    installEnv: job.installEnv,
    inlineInstall: true,
    deferTidying,
    ...(job.integrity ? { pinnedIntegrity: job.integrity } : {}),
    ...(job.writable ? { sessionWritable: job.writable } : {}),
    ...(job.runAsWhenRoot ? { runAsWhenRoot: job.runAsWhenRoot } : {}),
    ...(job.uvx ? { pythonIndex: job.uvx.index } : {}),
    stateDir: job.stateDir,
    settings: {
      ...(job.installHosts.length > 0 ? { installAllowNet: job.installHosts.join(',') } : {}),
      ...(job.userCache ? {} : { npmUserCache: 'off' }),
      ...(job.stateRoot ? { stateRoot: job.stateRoot } : {}),
    },
  });
  return backend.create({ sessionId: 'install', env: {}, ttlMs: job.deadlineMs });
}
