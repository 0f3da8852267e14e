import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { ExitStatus, KillSignal, SandboxProcess } from './contract.js';
import { ProcessClosedError } from './errors.js';

/** A contract process backed by a Node child process. */
export interface ChildSandboxProcess extends SandboxProcess {
  readonly pid: number;
}

export interface AdaptChildOptions {
  /**
   * Delivers a signal. By default to the child alone while it runs; a backend that started the
   * child in its own process group, or behind a launcher, passes its own.
   */
  readonly signal?: (signal: KillSignal) => void;
}

/**
 * Adapts a spawned child (stdio all pipes) to the contract: writes serialized and waiting for
 * `drain`, EPIPE after the child is gone turned into a typed error instead of a host crash, and
 * the exit status as a promise. Backends that run processes on this machine share it.
 */
export function adaptChildProcess(child: ChildProcess, options: AdaptChildOptions = {}): ChildSandboxProcess {
  const { stdin, stdout, stderr } = child;
  if (!stdin || !stdout || !stderr) throw new TypeError('adaptChildProcess needs a child with piped stdio');
  let stdinError: Error | undefined;
  let stdinClosed = false;
  stdin.on('error', (error) => {
    stdinError = error;
  });
  const exit = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });

  let tail: Promise<void> = Promise.resolve();
  const writeNow = async (chunk: Uint8Array): Promise<void> => {
    if (stdinClosed) throw new ProcessClosedError('stdin is closed');
    if (stdinError || stdin.destroyed) {
      throw new ProcessClosedError('the process no longer reads its stdin', { cause: stdinError });
    }
    if (!stdin.write(chunk)) await drainOrClose(stdin);
  };
  const deliver =
    options.signal ??
    ((signal: KillSignal) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    });

  return {
    pid: child.pid as number,
    stdout,
    stderr,
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
      deliver(signal);
    },
  };
}

/**
 * Waits for a writable's `drain` (or its `close`, or any of `others`), removing the listeners that
 * lost the race: a slow reader must not pile them up.
 */
export async function drainOrClose(
  stream: NodeJS.EventEmitter,
  ...others: Promise<unknown>[]
): Promise<void> {
  const done = new AbortController();
  try {
    await Promise.race([
      once(stream, 'drain', { signal: done.signal }),
      once(stream, 'close', { signal: done.signal }),
      ...others,
    ]);
  } finally {
    done.abort();
  }
}

/** Ends every process with SIGKILL and waits until each has exited: the heart of a sandbox's close(). */
export async function killAll(procs: Iterable<SandboxProcess>): Promise<void> {
  await Promise.all(
    [...procs].map(async (proc) => {
      await proc.kill('SIGKILL');
      await proc.exit;
    }),
  );
}
