import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { SandboxFailureError } from '@mcpsandbox/core';

export const SANDBOX_EXEC = '/usr/bin/sandbox-exec';

/**
 * `sandbox-exec -p <profile> -- <file> <args…>`: the profile as an argument (never a file the
 * sandbox could rewrite), `--` so that no argument of the command is read as an option. The
 * environment is exactly `env` (sandbox-exec adds nothing). Its own process group, so that
 * teardown reaches every process that stayed in it.
 */
export function sandboxArgv(profile: string, file: string, args: readonly string[]): string[] {
  return ['-p', profile, '--', file, ...args];
}

export async function startSandboxed(
  sandboxExec: string,
  argv: readonly string[],
  options: { readonly env: Readonly<Record<string, string>>; readonly cwd: string },
): Promise<ChildProcess> {
  const child = spawn(sandboxExec, argv, {
    env: { ...options.env },
    cwd: options.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  try {
    await once(child, 'spawn');
  } catch (error) {
    throw new SandboxFailureError(`cannot start sandbox-exec: ${(error as Error).message}`, {
      cause: error,
      code: 'E_EXEC',
    });
  }
  return child;
}
