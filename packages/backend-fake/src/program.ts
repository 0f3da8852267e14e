/**
 * The API of an in-memory program. A program is an async function that gets a context shaped
 * like a process (argv, env, stdio, signals) and returns its exit code. The same context shape is
 * also built over a real Node process (see `runFakeMcpServer`), so one implementation serves both.
 */

/** An output stream of a program. */
export interface FakeOutput {
  /**
   * Writes bytes (strings are encoded as UTF-8). Resolves once accepted: it waits while the reader
   * is slow (backpressure), and rejects once the reader is gone or the process was killed.
   */
  write(data: Uint8Array | string): Promise<void>;
}

export type FakeSignal = 'SIGTERM';

export interface FakeProgramContext {
  /** The whole command as given to `exec`; `argv[0]` is the program name. */
  readonly argv: readonly string[];
  /** The arguments after the program name. */
  readonly args: readonly string[];
  /** Exactly the sandbox spec's env plus the per-exec env; never the host's. */
  readonly env: Readonly<Record<string, string>>;
  /** The `cwd` given to `exec`, if any (in-memory programs have no file system of their own). */
  readonly cwd: string | undefined;
  /** Bytes written to the process, in order; ends at `closeStdin()`. */
  readonly stdin: AsyncIterable<Uint8Array>;
  readonly stdout: FakeOutput;
  readonly stderr: FakeOutput;
  /**
   * Aborted when the process ends: with the signal name as reason when it is killed (SIGKILL,
   * unhandled SIGTERM, sandbox close or TTL), with `'exit'` once the program returned. Pending
   * stdin reads, writes and sleeps then reject, so a program (and any task it left running)
   * unwinds; its result is ignored after that.
   */
  readonly signal: AbortSignal;
  /**
   * Like `process.on('SIGTERM', handler)`: while at least one handler is registered, SIGTERM calls
   * the handlers instead of ending the program. SIGKILL always ends it. Returns an unsubscribe.
   */
  onSignal(signal: FakeSignal, handler: () => void): () => void;
  /** Waits `ms` milliseconds (`Infinity`: until the process ends); rejects when the process ends. */
  sleep(ms: number): Promise<void>;
}

/**
 * An in-memory program. Its resolved value is the exit code (`undefined` means 0); a thrown
 * error prints to stderr and exits with 1, like an uncaught exception in Node.
 */
export type FakeProgram = (context: FakeProgramContext) => Promise<number | undefined> | number | undefined;

/** Programs by command name (`command[0]` of `exec`). */
export type FakePrograms = Readonly<Record<string, FakeProgram>>;
