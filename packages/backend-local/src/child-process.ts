import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  adaptChildProcess,
  type ChildSandboxProcess,
  type KillSignal,
  SandboxFailureError,
  type SandboxProcess,
} from '@mcpsandbox/core';

export type SpawnedProcess = ChildSandboxProcess;

/**
 * Spawns `argv` in its own process group and adapts it to the contract. The group lets `kill`
 * reach whatever the command starts (npx, shells), so nothing is left behind.
 */
export function spawnProcess(
  argv: readonly string[],
  options: { env: Record<string, string>; cwd?: string },
): Promise<SpawnedProcess> {
  return startProcess(argv, options).proc;
}

/**
 * {@link spawnProcess}, with the pid as soon as the child exists: a caller that may have to end
 * it before the start is confirmed (at exit, on a signal) can signal its group at once.
 */
export function startProcess(
  argv: readonly string[],
  options: { env: Record<string, string>; cwd?: string },
): { readonly pid: number | undefined; readonly proc: Promise<SpawnedProcess> } {
  const [file, ...args] = argv;
  if (file === undefined) {
    return {
      pid: undefined,
      proc: Promise.reject(new SandboxFailureError('empty command', { code: 'E_EXEC' })),
    };
  }
  const child = spawn(file, args, {
    env: options.env,
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  return { pid: child.pid, proc: started(child, file).then((running) => adaptChild(running)) };
}

/**
 * Starts a detached child (its own process group) and waits until it runs, mapping spawn
 * failures to typed errors. stdin, stdout and stderr must be pipes.
 */
export function startChild(
  file: string,
  args: readonly string[],
  options: SpawnOptions,
): Promise<ChildProcess> {
  return started(spawn(file, args, { ...options, detached: true }), file);
}

async function started(child: ChildProcess, file: string): Promise<ChildProcess> {
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
  // The group may outlive its leader (a daemonized grandchild): signal it even after exit.
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
  return adaptChildProcess(child, { signal: options.signal ?? signalGroup });
}

/**
 * Keeps a process's unread output until the returned release: Node drains and drops the output of
 * a child that exits while nothing listens to it, and an early start's reader (the session that
 * takes it) comes later than the exit of a server that ends at once.
 */
export function holdOutput(proc: SandboxProcess): () => void {
  const streams = [proc.stdout, proc.stderr].filter(
    (stream): stream is NodeJS.ReadableStream & AsyncIterable<Uint8Array> =>
      typeof (stream as { on?: unknown }).on === 'function',
  );
  const hold = () => {};
  for (const stream of streams) stream.on('readable', hold);
  return () => {
    for (const stream of streams) stream.removeListener('readable', hold);
  };
}
