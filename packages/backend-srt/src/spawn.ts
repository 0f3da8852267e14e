import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { SandboxFailureError } from '@mcpsandbox/core';

/** Starts a detached child (its own process group) with piped stdio, mapping failures to typed errors. */
export async function startChild(
  file: string,
  args: readonly string[],
  options: { readonly env: Record<string, string>; readonly cwd: string },
): Promise<ChildProcess> {
  const child = spawn(file, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  try {
    await once(child, 'spawn');
  } catch (error) {
    throw new SandboxFailureError(`cannot start the srt sandbox: ${(error as Error).message}`, {
      cause: error,
      code: 'E_EXEC',
    });
  }
  return child;
}
