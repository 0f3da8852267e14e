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
import { NotFoundError, type Sandbox as SdkSandbox } from 'e2b';
import { ByteQueue } from './byte-queue.js';
import { type EnvdClient, EnvdError, type ProcessEvent } from './envd.js';
import { E2B_ERROR_CODES, wrapE2BError } from './errors.js';
import { toExitStatus } from './exit-status.js';
import { runHelper } from './helper.js';
import { toExecLine } from './shell.js';
import { oneLine } from './text.js';

/** Output buffered per stream before the event stream is paused. */
const OUTPUT_HIGH_WATER = 1024 * 1024;
/** Largest stdin batch sent in one SendInput call (queued writes are coalesced, in order). */
const STDIN_BATCH = 1024 * 1024;

export interface StartOptions {
  readonly envs: Record<string, string>;
  readonly cwd?: string;
  readonly logger: Logger;
  readonly onEvent?: (event: SandboxEvent) => void;
  readonly requestTimeoutMs: number;
  /** Applied to any text from the VM before it is logged. */
  readonly redact: (text: string) => string;
}

/**
 * Starts `argv` in the VM through envd and adapts it to the contract. The command runs with stdin
 * enabled and no command timeout (a timeout would silently kill a stdio server), and its stream
 * stays attached until it ends: envd drops output nobody watches. The stream is read through the
 * capped envd client, so nothing the VM sends can make this host hold more than a frame.
 */
export async function startProcess(
  sdk: SdkSandbox,
  envd: EnvdClient,
  argv: readonly string[],
  options: StartOptions,
): Promise<E2BProcess> {
  const line = toExecLine(argv);
  const controller = new AbortController();
  const events = envd.start(
    {
      cmd: '/bin/bash',
      args: ['-l', '-c', line],
      envs: options.envs,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    },
    { stdin: true, signal: controller.signal },
  );
  let first: IteratorResult<ProcessEvent>;
  const timer = setTimeout(() => controller.abort(), options.requestTimeoutMs);
  try {
    first = await events.next();
  } catch (error) {
    throw wrapE2BError(error, `start ${argv[0]}`);
  } finally {
    clearTimeout(timer);
  }
  if (first.done || first.value.type !== 'start') {
    controller.abort();
    throw new SandboxFailureError(`envd did not report the start of ${argv[0]}`, {
      code: E2B_ERROR_CODES.other,
    });
  }
  return new E2BProcess(sdk, envd, first.value.pid, events, controller, options);
}

export class E2BProcess implements SandboxProcess {
  readonly pid: number;
  readonly exit: Promise<ExitStatus>;
  readonly #stdout = new ByteQueue(OUTPUT_HIGH_WATER);
  readonly #stderr = new ByteQueue(OUTPUT_HIGH_WATER);
  readonly #sdk: SdkSandbox;
  readonly #envd: EnvdClient;
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
    sdk: SdkSandbox,
    envd: EnvdClient,
    pid: number,
    events: AsyncIterator<ProcessEvent>,
    controller: AbortController,
    options: StartOptions,
  ) {
    this.#sdk = sdk;
    this.#envd = envd;
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
    if (!this.#envd.supportsCloseStdin) {
      // Templates built before envd 0.5.2 cannot signal EOF: the bridge's SIGTERM step ends the server.
      this.#options.logger.warn(
        'this E2B template cannot close stdin (envd < 0.5.2); rebuild it to get clean EOF',
      );
      this.#options.onEvent?.({ type: 'e2b-stdin-close-unsupported', pid: this.pid });
      return;
    }
    try {
      await this.#envd.closeStdin(this.pid);
    } catch (error) {
      if (notFound(error) || this.#settled) return; // already exited
      throw wrapE2BError(error, 'close the server stdin');
    }
  }

  async kill(signal: KillSignal = 'SIGTERM'): Promise<void> {
    if (this.#settled) return;
    try {
      if (signal === 'SIGKILL') {
        await this.#envd.kill(this.pid);
        return;
      }
      // envd's own SIGTERM also stops forwarding output, losing the server's last replies; a
      // `kill` run in the VM delivers the same signal and keeps the stream flowing. It runs
      // without a login profile and its output is discarded (helper.ts).
      await runHelper(this.#envd, `kill -s TERM ${this.pid}`, { timeoutMs: this.#options.requestTimeoutMs });
    } catch (error) {
      if (notFound(error) || this.#settled) return;
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
        await this.#envd.sendInput(this.pid, data);
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

  async #pump(events: AsyncIterator<ProcessEvent>): Promise<void> {
    let failure: unknown;
    try {
      for (;;) {
        const next = await events.next();
        if (next.done) break;
        const event = next.value;
        if (event.type === 'data') {
          await (event.stream === 'stdout' ? this.#stdout : this.#stderr).push(event.data);
        } else if (event.type === 'end') {
          this.#settle(toExitStatus(event));
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
    // Asked of E2B's API, not of envd: the VM must not be the one to say whether it still runs.
    const running = await this.#sdk
      .getInfo({ requestTimeoutMs: 5000 })
      .then((info) => info.state === 'running')
      .catch((error: unknown) => (notFound(error) ? false : undefined));
    if (this.#settled) return;
    if (this.#ending) {
      this.#settle({ code: null, signal: 'SIGKILL' });
      return;
    }
    let error: SandboxError;
    if (failure instanceof EnvdError && failure.code === E2B_ERROR_CODES.protocol) {
      // envd broke the protocol (a frame over the cap): what it says next cannot be trusted.
      error = new SandboxFailureError(this.#options.redact(failure.message), {
        cause: failure,
        code: E2B_ERROR_CODES.protocol,
      });
      await this.#envd.kill(this.pid).catch(() => undefined);
    } else if (running === false) {
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
              `the connection to the server in the E2B sandbox dropped; its output since then is lost (${this.#options.redact(oneLine(failure))})`,
              { cause: failure, code: E2B_ERROR_CODES.streamLost },
            );
      // Without its output stream the server is useless and would hold the VM: end it.
      await this.#envd.kill(this.pid).catch(() => undefined);
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

function notFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === E2B_ERROR_CODES.notFound || error instanceof NotFoundError;
}
