import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  type ExitStatus,
  type KillSignal,
  ProcessClosedError,
  SandboxFailureError,
  type SandboxProcess,
} from '@mcpsandbox/core';

export interface SpawnedProcess extends SandboxProcess {
  readonly pid: number;
}

/**
 * Spawns `argv` in its own process group and adapts it to the contract. The group lets `kill`
 * reach whatever the command starts (npx, shells), so nothing is left behind.
 */
export async function spawnProcess(
  argv: readonly string[],
  options: { env: Record<string, string>; cwd?: string },
): Promise<SpawnedProcess> {
  const [file, ...args] = argv;
  if (file === undefined) throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
  const child = await startChild(file, args, {
    env: options.env,
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return adaptChild(child);
}

/**
 * Starts a detached child (its own process group) and waits until it runs, mapping spawn
 * failures to typed errors. stdin, stdout and stderr must be pipes.
 */
export async function startChild(
  file: string,
  args: readonly string[],
  options: SpawnOptions,
): Promise<ChildProcess> {
  const child = spawn(file, args, { ...options, detached: true });
  try {
    await once(child, 'spawn');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const what = code === 'ENOENT' ? 'command not found' : 'cannot start command';
    throw new SandboxFailureError(`${what}: ${file}`, {
      cause: error,
      code: code === 'ENOENT' ? 'E_COMMAND_NOT_FOUND' : 'E_EXEC',
    });
  }
  return child;
}

export interface AdaptOptions {
  /**
   * Delivers a signal; by default to the child's process group. A sandbox that knows better
   * (the sandboxed command rather than its launcher) passes its own.
   */
  readonly signal?: (signal: KillSignal) => void;
}

export function adaptChild(child: ChildProcess, options: AdaptOptions = {}): SpawnedProcess {
  const pid = child.pid as number;
  const stdin = child.stdin!;
  let stdinError: Error | undefined;
  let stdinClosed = false;
  // EPIPE after the child is gone must not crash the host: remember it and fail later writes.
  stdin.on('error', (error) => {
    stdinError = error;
  });

  const exit = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });

  let tail: Promise<void> = Promise.resolve();
  const writeNow = async (chunk: Uint8Array): Promise<void> => {
    if (stdinClosed) throw new ProcessClosedError('stdin is closed');
    if (stdinError || stdin.destroyed) {
      throw new ProcessClosedError('the process no longer reads its stdin', { cause: stdinError });
    }
    if (!stdin.write(chunk)) {
      // Cancel the listener that lost the race, or every slow write would leave one behind.
      const done = new AbortController();
      try {
        await Promise.race([
          once(stdin, 'drain', { signal: done.signal }),
          once(stdin, 'close', { signal: done.signal }),
        ]);
      } finally {
        done.abort();
      }
    }
  };

  const signalGroup = (signal: KillSignal) => {
    try {
      process.kill(-pid, signal);
    } catch {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    }
  };
  const deliver = options.signal ?? signalGroup;

  return {
    pid,
    stdout: child.stdout!,
    stderr: child.stderr!,
    exit,
    write(chunk) {
      const result = tail.then(() => writeNow(chunk));
      tail = result.catch(() => undefined);
      return result;
    },
    async closeStdin() {
      await tail;
      if (stdinClosed) return;
      stdinClosed = true;
      stdin.end();
    },
    async kill(signal = 'SIGTERM') {
      // The group may outlive its leader (a daemonized grandchild): signal it even after exit.
      deliver(signal);
    },
  };
}
