import {
  type ExitStatus,
  type KillSignal,
  type Logger,
  ProcessClosedError,
  type SandboxError,
  type SandboxEvent,
  SandboxFailureError,
  type SandboxProcess,
} from '@mcpsandbox/core';
import { CommandExitError, NotFoundError, type Sandbox as SdkSandbox } from 'e2b';
import { ByteQueue } from './byte-queue.js';
import { E2B_ERROR_CODES, wrapE2BError } from './errors.js';
import { processRpc, type StartResponse, wrapRpcError } from './rpc.js';
import { toExecLine } from './shell.js';

/** Output buffered per stream before the event stream is paused. */
const OUTPUT_HIGH_WATER = 1024 * 1024;
/** Largest stdin batch sent in one SendInput call (queued writes are coalesced, in order). */
const STDIN_BATCH = 1024 * 1024;
/** envd sends a keepalive on an idle stream this often, so proxies never reap a quiet server. */
const KEEPALIVE_SECONDS = '50';

export interface StartOptions {
  readonly envs: Record<string, string>;
  readonly cwd?: string;
  readonly logger: Logger;
  readonly onEvent?: (event: SandboxEvent) => void;
  readonly requestTimeoutMs: number;
}

/**
 * Starts `argv` in the VM through envd and adapts it to the contract. The command runs with stdin
 * enabled and no command timeout (the SDK's defaults, stdin off and 60 s, would each silently kill
 * a stdio server), and its stream stays attached until it ends: envd drops output nobody watches.
 */
export async function startProcess(
  sandbox: SdkSandbox,
  argv: readonly string[],
  options: StartOptions,
): Promise<E2BProcess> {
  const line = toExecLine(argv);
  const rpc = processRpc(sandbox);
  const controller = new AbortController();
  const events = rpc.start(
    {
      process: {
        cmd: '/bin/bash',
        args: ['-l', '-c', line],
        envs: options.envs,
        ...(options.cwd ? { cwd: options.cwd } : {}),
      },
      stdin: true,
    },
    { signal: controller.signal, headers: { 'Keepalive-Ping-Interval': KEEPALIVE_SECONDS } },
  );
  const iterator = events[Symbol.asyncIterator]();
  let first: IteratorResult<StartResponse>;
  const timer = setTimeout(() => controller.abort(), options.requestTimeoutMs);
  try {
    first = await iterator.next();
  } catch (error) {
    throw wrapRpcError(error, `start ${argv[0]}`);
  } finally {
    clearTimeout(timer);
  }
  const start = first.done ? undefined : first.value.event?.event;
  if (start?.case !== 'start') {
    controller.abort();
    throw new SandboxFailureError(`envd did not report the start of ${argv[0]}`, {
      code: E2B_ERROR_CODES.other,
    });
  }
  return new E2BProcess(sandbox, start.value.pid, iterator, controller, options);
}

export class E2BProcess implements SandboxProcess {
  readonly pid: number;
  readonly exit: Promise<ExitStatus>;
  readonly #stdout = new ByteQueue(OUTPUT_HIGH_WATER);
  readonly #stderr = new ByteQueue(OUTPUT_HIGH_WATER);
  readonly #sandbox: SdkSandbox;
  readonly #controller: AbortController;
  readonly #options: StartOptions;
  #resolveExit!: (status: ExitStatus) => void;
  #settled = false;
  /** The sandbox is being closed on purpose: a broken stream is expected, not a fault. */
  #ending = false;
  #stdinClosing = false;
  #pending: { chunk: Uint8Array; resolve: () => void; reject: (error: unknown) => void }[] = [];
  #flushing: Promise<void> | undefined;
  #stdinError: unknown;

  constructor(
    sandbox: SdkSandbox,
    pid: number,
    events: AsyncIterator<StartResponse>,
    controller: AbortController,
    options: StartOptions,
  ) {
    this.#sandbox = sandbox;
    this.pid = pid;
    this.#controller = controller;
    this.#options = options;
    this.exit = new Promise((resolve) => {
      this.#resolveExit = resolve;
    });
    void this.#pump(events);
  }

  get stdout(): AsyncIterable<Uint8Array> {
    return this.#stdout;
  }

  get stderr(): AsyncIterable<Uint8Array> {
    return this.#stderr;
  }

  /** True once the exit status is known (or the process was given up on). */
  get settled(): boolean {
    return this.#settled;
  }

  write(chunk: Uint8Array): Promise<void> {
    if (this.#stdinClosing) return Promise.reject(new ProcessClosedError('stdin is closed'));
    if (this.#stdinError !== undefined || this.#settled) {
      return Promise.reject(
        new ProcessClosedError('the process no longer reads its stdin', { cause: this.#stdinError }),
      );
    }
    return new Promise<void>((resolve, reject) => {
      // Copied: callers may reuse their buffer as soon as write() returns a promise.
      this.#pending.push({ chunk: Uint8Array.from(chunk), resolve, reject });
      this.#flushing ??= this.#flush();
    });
  }

  async closeStdin(): Promise<void> {
    if (this.#stdinClosing) return;
    this.#stdinClosing = true;
    await this.#flushing;
    if (this.#settled || this.#stdinError !== undefined) return;
    try {
      await this.#sandbox.commands.closeStdin(this.pid);
    } catch (error) {
      if (error instanceof NotFoundError) return; // already exited
      if (error instanceof Error && /doesn't support closeStdin/.test(error.message)) {
        // Templates built before envd 0.5.2 cannot signal EOF: the bridge's SIGTERM step ends the server.
        this.#options.logger.warn(
          'this E2B template cannot close stdin (envd < 0.5.2); rebuild it to get clean EOF',
        );
        this.#options.onEvent?.({ type: 'e2b-stdin-close-unsupported', pid: this.pid });
        return;
      }
      throw wrapE2BError(error, 'close the server stdin');
    }
  }

  async kill(signal: KillSignal = 'SIGTERM'): Promise<void> {
    if (this.#settled) return;
    try {
      if (signal === 'SIGKILL') {
        await this.#sandbox.commands.kill(this.pid);
        return;
      }
      // envd's own SIGTERM also stops forwarding output, losing the server's last replies; a
      // `kill` run in the VM delivers the same signal and keeps the stream flowing.
      await this.#sandbox.commands.run(`kill -s TERM ${this.pid}`, {
        timeoutMs: this.#options.requestTimeoutMs,
      });
    } catch (error) {
      if (error instanceof CommandExitError || error instanceof NotFoundError || this.#settled) return;
      throw wrapE2BError(error, `send ${signal} to the server`);
    }
  }

  /** Called before the sandbox is killed on purpose, so the broken stream is not reported as a fault. */
  expectEnd(): void {
    this.#ending = true;
  }

  /** The sandbox is going away: settle now, keep what was buffered, stop reading. */
  abandon(status: ExitStatus): void {
    this.#ending = true;
    this.#settle(status);
    this.#controller.abort();
  }

  async #flush(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = [this.#pending.shift()!];
      let size = batch[0]!.chunk.length;
      while (this.#pending.length > 0 && size + this.#pending[0]!.chunk.length <= STDIN_BATCH) {
        const next = this.#pending.shift()!;
        size += next.chunk.length;
        batch.push(next);
      }
      const data = batch.length === 1 ? batch[0]!.chunk : Buffer.concat(batch.map((b) => b.chunk));
      try {
        if (this.#stdinError !== undefined) throw this.#stdinError;
        await this.#sandbox.commands.sendStdin(this.pid, data, {
          requestTimeoutMs: this.#options.requestTimeoutMs,
        });
        for (const item of batch) item.resolve();
      } catch (error) {
        // A failed write fails every later one too: the order of bytes could not be kept otherwise.
        this.#stdinError ??= error;
        const closed = new ProcessClosedError('the process no longer reads its stdin', { cause: error });
        for (const item of [...batch, ...this.#pending.splice(0)]) item.reject(closed);
      }
    }
    this.#flushing = undefined;
  }

  async #pump(events: AsyncIterator<StartResponse>): Promise<void> {
    let failure: unknown;
    try {
      for (;;) {
        const next = await events.next();
        if (next.done) break;
        const event = next.value.event?.event;
        if (event?.case === 'data') {
          const output = event.value.output;
          if (output.case === 'stdout') await this.#stdout.push(output.value);
          else if (output.case === 'stderr') await this.#stderr.push(output.value);
        } else if (event?.case === 'end') {
          this.#settle(toExitStatus(event.value));
          return;
        }
      }
    } catch (error) {
      failure = error;
    }
    if (this.#settled) return;
    await this.#lost(failure);
  }

  /** The stream ended without an exit status: the VM is gone, or the connection dropped. */
  async #lost(failure: unknown): Promise<void> {
    if (this.#ending) {
      this.#settle({ code: null, signal: 'SIGKILL' });
      return;
    }
    const running = await this.#sandbox.isRunning({ requestTimeoutMs: 5000 }).catch(() => undefined);
    if (this.#settled) return;
    if (this.#ending) {
      this.#settle({ code: null, signal: 'SIGKILL' });
      return;
    }
    let error: SandboxError;
    if (running === false) {
      error = new SandboxFailureError('the E2B sandbox ended (TTL reached or killed) while the server ran', {
        cause: failure,
        code: E2B_ERROR_CODES.timeout,
      });
    } else {
      error =
        failure === undefined
          ? new SandboxFailureError('the stream from the server ended without an exit status', {
              code: E2B_ERROR_CODES.streamLost,
            })
          : new SandboxFailureError(
              `the connection to the server in the E2B sandbox dropped; its output since then is lost (${oneLine(failure)})`,
              { cause: failure, code: E2B_ERROR_CODES.streamLost },
            );
      // Without its output stream the server is useless and would hold the VM: end it.
      await this.#sandbox.commands.kill(this.pid).catch(() => false);
    }
    this.#options.logger.warn(error.message);
    this.#options.onEvent?.({
      type: 'e2b-process-lost',
      pid: this.pid,
      code: error.code,
      message: error.message,
    });
    this.#settle({ code: null, signal: 'SIGKILL', error });
  }

  #settle(status: ExitStatus): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#stdout.end();
    this.#stderr.end();
    for (const item of this.#pending.splice(0)) item.reject(new ProcessClosedError('the process has exited'));
    this.#resolveExit(status);
  }
}

/** Go's wording for signals in envd's "signal: <name>" status. */
const SIGNALS: Record<string, string> = {
  hangup: 'SIGHUP',
  interrupt: 'SIGINT',
  quit: 'SIGQUIT',
  'illegal instruction': 'SIGILL',
  'trace/breakpoint trap': 'SIGTRAP',
  aborted: 'SIGABRT',
  'bus error': 'SIGBUS',
  'floating point exception': 'SIGFPE',
  killed: 'SIGKILL',
  'user defined signal 1': 'SIGUSR1',
  'segmentation fault': 'SIGSEGV',
  'user defined signal 2': 'SIGUSR2',
  'broken pipe': 'SIGPIPE',
  'alarm clock': 'SIGALRM',
  terminated: 'SIGTERM',
};

/** envd's end event to the contract's status; a non-zero code stays a non-zero code. */
export function toExitStatus(end: { exitCode: number; exited: boolean; status: string }): ExitStatus {
  const signalled = /^signal: (.+?)(?: \(core dumped\))?$/.exec(end.status);
  if (!end.exited && signalled) {
    const name = signalled[1] as string;
    return { code: null, signal: SIGNALS[name] ?? name };
  }
  return { code: end.exitCode, signal: null };
}

function oneLine(value: unknown): string {
  return (value instanceof Error ? value.message : String(value)).replace(/\s+/g, ' ').trim();
}
