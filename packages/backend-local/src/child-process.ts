import { type ChildProcess, spawn } from 'node:child_process';
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
  const child = spawn(file, args, {
    env: options.env,
    cwd: options.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
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
  return adaptChild(child);
}

function adaptChild(child: ChildProcess): SpawnedProcess {
  const pid = child.pid as number;
  const stdin = child.stdin!;
  let stdinError: Error | undefined;
  let stdinClosed = false;
  let exited = false;
  // EPIPE after the child is gone must not crash the host: remember it and fail later writes.
  stdin.on('error', (error) => {
    stdinError = error;
  });

  const exit = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
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
      await Promise.race([once(stdin, 'drain'), once(stdin, 'close')]);
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
      signalGroup(signal);
      if (exited) return;
    },
  };
}
