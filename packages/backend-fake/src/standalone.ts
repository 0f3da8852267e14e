import { fileURLToPath } from 'node:url';
import { fakeMcpServer } from './fake-mcp-server.js';
import type { FakeOutput, FakeProgram, FakeProgramContext } from './program.js';

/** The Node streams a standalone program runs over; defaults are the real process's. */
export interface StandaloneOptions {
  /** Flags, as after the program name (default `process.argv.slice(2)`). */
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly stdin?: AsyncIterable<Uint8Array>;
  readonly stdout?: NodeJS.WritableStream;
  readonly stderr?: NodeJS.WritableStream;
}

/**
 * Runs the fake MCP server over real streams (by default this process's stdio) and resolves
 * with its exit code; the caller decides whether to `process.exit` with it. SIGTERM ends the
 * process as usual unless `--ignore-sigterm` is given.
 */
export function runFakeMcpServer(options: StandaloneOptions = {}): Promise<number> {
  return runStandalone(fakeMcpServer, 'fake-mcp-server', options);
}

/** Runs any program over Node streams: the same context API the fake backend gives. */
export async function runStandalone(
  program: FakeProgram,
  name: string,
  options: StandaloneOptions = {},
): Promise<number> {
  const args = options.args ?? process.argv.slice(2);
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(options.env ?? process.env)) {
    if (value !== undefined) env[key] = value;
  }
  const abort = new AbortController();
  const handlers = new Set<() => void>();
  const timers = new Set<NodeJS.Timeout>();
  const context: FakeProgramContext = {
    argv: Object.freeze([name, ...args]),
    args: Object.freeze([...args]),
    env: Object.freeze(env),
    cwd: process.cwd(),
    stdin: options.stdin ?? process.stdin,
    stdout: nodeOutput(options.stdout ?? process.stdout),
    stderr: nodeOutput(options.stderr ?? process.stderr),
    // A real process dies from a signal it does not handle; nothing is left to abort.
    signal: abort.signal,
    onSignal: (signal, handler) => {
      handlers.add(handler);
      process.on(signal, handler);
      return () => {
        handlers.delete(handler);
        process.off(signal, handler);
      };
    },
    sleep: (ms) =>
      new Promise((resolve) => {
        // Infinity: an interval keeps the event loop (and so the process) alive until killed.
        timers.add(
          Number.isFinite(ms) ? setTimeout(resolve, Math.max(0, ms)) : setInterval(() => undefined, 1 << 30),
        );
      }),
  };
  try {
    const code = await program(context);
    return code === undefined ? 0 : code;
  } finally {
    for (const handler of handlers) process.off('SIGTERM', handler);
    // Sleeps of tasks the program left behind must not keep an embedding process alive.
    for (const timer of timers) clearTimeout(timer);
  }
}

function nodeOutput(stream: NodeJS.WritableStream): FakeOutput {
  let failure: Error | undefined;
  // EPIPE once the reader is gone must not crash the process: later writes reject instead.
  stream.on('error', (error: Error) => {
    failure ??= error;
  });
  return {
    write: (data) =>
      new Promise((resolve, reject) => {
        if (failure) {
          reject(failure);
          return;
        }
        // The callback fires once the chunk is handed to the OS, which gives backpressure.
        stream.write(data, (error) => (error ? reject(error) : resolve()));
      }),
  };
}

/**
 * The path of the `mcpsandbox-fake-server` executable in the installed package, to spawn the
 * fake server as a real process: `spawn(process.execPath, [fakeMcpServerBinPath(), ...flags])`.
 */
export function fakeMcpServerBinPath(): string {
  return fileURLToPath(new URL('./bin.js', import.meta.url));
}
