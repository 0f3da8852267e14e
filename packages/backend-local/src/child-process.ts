import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  adaptChildProcess,
  type ChildSandboxProcess,
  type KillSignal,
  SandboxFailureError,
} from '@mcpsandbox/core';

export type SpawnedProcess = ChildSandboxProcess;

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
