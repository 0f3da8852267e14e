import {
  type ExitStatus,
  type KillSignal,
  type Logger,
  ProcessClosedError,
  type SandboxProcess,
} from '@mcpsandbox/core';
import { ByteChannel } from './channel.js';
import type { FakeOutput, FakeProgram, FakeProgramContext } from './program.js';

export interface StartOptions {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string | undefined;
  readonly highWaterMark: number;
  readonly logger: Logger;
}

const encoder = new TextEncoder();

/**
 * One running program adapted to the contract. The program runs as an ordinary async function in
 * this process; "killing" it ends its streams and its exit status at once and makes its pending
 * stdin reads, writes and sleeps reject, so it unwinds on its own.
 */
export class FakeProcess implements SandboxProcess {
  readonly stdout: AsyncIterable<Uint8Array>;
  readonly stderr: AsyncIterable<Uint8Array>;
  readonly exit: Promise<ExitStatus>;
  readonly #stdin: ByteChannel;
  readonly #stdout: ByteChannel;
  readonly #stderr: ByteChannel;
  readonly #abort = new AbortController();
  readonly #termHandlers = new Set<() => void>();
  readonly #logger: Logger;
  readonly #name: string;
  #resolveExit!: (status: ExitStatus) => void;
  #status: ExitStatus | undefined;
  #stdinClosed = false;

  constructor(program: FakeProgram, options: StartOptions) {
    const hwm = options.highWaterMark;
    this.#logger = options.logger;
    this.#name = options.argv[0] ?? '';
    this.#stdin = new ByteChannel({
      highWaterMark: hwm,
      cancelError: () => new ProcessClosedError('the process no longer reads its stdin'),
    });
    const epipe = () => new ProcessClosedError('the reader stopped reading (EPIPE)');
    this.#stdout = new ByteChannel({ highWaterMark: hwm, cancelError: epipe });
    this.#stderr = new ByteChannel({ highWaterMark: hwm, cancelError: epipe });
    this.stdout = this.#stdout;
    this.stderr = this.#stderr;
    this.exit = new Promise((resolve) => {
      this.#resolveExit = resolve;
    });
    const context = this.#context(options);
    // Start on a later tick, as a real process does: exec returns before the program runs.
    void Promise.resolve()
      .then(() => program(context))
      .then(
        (code) => this.#finish({ code: normalizeCode(code), signal: null }),
        (error: unknown) => {
          if (this.#status) return;
          const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
          this.#logger.debug(`fake program ${this.#name} threw: ${text}`);
          void this.#stderr.write(encoder.encode(`${this.#name}: ${text}\n`)).catch(() => undefined);
          this.#finish({ code: 1, signal: null });
        },
      );
  }

  write(chunk: Uint8Array): Promise<void> {
    if (this.#stdinClosed) return Promise.reject(new ProcessClosedError('stdin is closed'));
    // The channel keeps call order and copies the chunk now, so callers may reuse their buffer.
    return this.#stdin.write(chunk);
  }

  async closeStdin(): Promise<void> {
    if (this.#stdinClosed) return;
    this.#stdinClosed = true;
    // EOF reaches the program after every write made before this call.
    this.#stdin.end();
  }

  async kill(signal: KillSignal = 'SIGTERM'): Promise<void> {
    if (this.#status) return;
    if (signal === 'SIGTERM' && this.#termHandlers.size > 0) {
      for (const handler of [...this.#termHandlers]) {
        try {
          handler();
        } catch (error) {
          this.#logger.debug(`SIGTERM handler of ${this.#name} threw: ${String(error)}`);
        }
      }
      return;
    }
    this.#finish({ code: null, signal });
  }

  #finish(status: ExitStatus): void {
    if (this.#status) return;
    this.#status = status;
    const gone = new ProcessClosedError(
      status.signal ? `the process was killed with ${status.signal}` : 'the process has exited',
    );
    if (status.signal) {
      // Killed: what it had not written yet is lost; what it wrote stays readable.
      this.#stdout.abortWrites(gone);
      this.#stderr.abortWrites(gone);
    } else {
      // Exited: writes already made still reach the reader (pipes are flushed at exit).
      this.#stdout.end();
      this.#stderr.end();
    }
    // Either way, tasks the program left behind unwind: their sleeps end (no timer outlives the
    // process and holds the host's event loop) and their reads and writes fail.
    this.#abort.abort(status.signal ?? 'exit');
    this.#stdin.abortReads(gone);
    this.#termHandlers.clear();
    this.#resolveExit(status);
  }

  #context(options: StartOptions): FakeProgramContext {
    const signal = this.#abort.signal;
    const output = (channel: ByteChannel): FakeOutput => ({
      write: (data) => {
        if (signal.aborted) return Promise.reject(endedError(signal));
        return channel.write(typeof data === 'string' ? encoder.encode(data) : data);
      },
    });
    const stdin = this.#stdin;
    return {
      argv: Object.freeze([...options.argv]),
      args: Object.freeze(options.argv.slice(1)),
      env: Object.freeze({ ...options.env }),
      cwd: options.cwd,
      stdin,
      stdout: output(this.#stdout),
      stderr: output(this.#stderr),
      signal,
      onSignal: (_name, handler) => {
        if (this.#status) return () => undefined;
        this.#termHandlers.add(handler);
        return () => {
          this.#termHandlers.delete(handler);
        };
      },
      sleep: (ms) => abortableSleep(ms, signal),
    };
  }
}

function endedError(signal: AbortSignal): ProcessClosedError {
  const reason = String(signal.reason);
  return new ProcessClosedError(
    reason === 'exit' ? 'the process has exited' : `the process was killed with ${reason}`,
  );
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(endedError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      if (timer) clearTimeout(timer);
      reject(endedError(signal));
    };
    // Infinity waits for the kill only: no timer, so nothing keeps the host's event loop alive.
    const timer = Number.isFinite(ms)
      ? setTimeout(
          () => {
            signal.removeEventListener('abort', onAbort);
            resolve();
          },
          Math.max(0, ms),
        )
      : undefined;
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Exit codes are 0–255 as on POSIX; a non-integer (or nothing) means 0 or 1 as Node does. */
function normalizeCode(code: number | undefined): number {
  if (code === undefined) return 0;
  if (!Number.isInteger(code)) return 1;
  return ((code % 256) + 256) % 256;
}
