import { PassThrough } from 'node:stream';
import {
  type ExitStatus,
  ProcessClosedError,
  type Sandbox,
  type SandboxBackend,
  type SandboxProcess,
  SPECIFICATION_VERSION,
} from '../src/index.js';

/**
 * A test-only backend whose single program mirrors stdin to stdout, re-chunked by `rechunk`.
 * It counts create() and close() so that tests can check the bridge closes exactly once.
 */
export interface MirrorBackend extends SandboxBackend {
  readonly created: number;
  readonly closed: number;
}

export function mirrorBackend(
  options: {
    rechunk?: (data: Buffer) => Buffer[];
    createDelayMs?: number;
    mutate?: (line: Buffer) => Buffer;
  } = {},
): MirrorBackend {
  let created = 0;
  let closed = 0;
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'mirror',
    isolation: 'none',
    get created() {
      return created;
    },
    get closed() {
      return closed;
    },
    async create(): Promise<Sandbox> {
      if (options.createDelayMs) await new Promise((r) => setTimeout(r, options.createDelayMs));
      created++;
      const procs: SandboxProcess[] = [];
      let isClosed = false;
      return {
        id: `mirror-${created}`,
        async exec() {
          const proc = mirrorProcess(options.rechunk ?? ((d) => [d]));
          procs.push(proc);
          return proc;
        },
        async close() {
          if (isClosed) return;
          isClosed = true;
          closed++;
          await Promise.all(procs.map((p) => p.kill('SIGKILL')));
        },
      };
    },
  };
}

function mirrorProcess(rechunk: (data: Buffer) => Buffer[]): SandboxProcess {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  stderr.end();
  let resolveExit!: (status: ExitStatus) => void;
  const exit = new Promise<ExitStatus>((r) => {
    resolveExit = r;
  });
  let stdinClosed = false;
  let dead = false;
  const finish = (status: ExitStatus) => {
    if (dead) return;
    dead = true;
    stdout.end();
    resolveExit(status);
  };
  return {
    stdout,
    stderr,
    exit,
    async write(chunk) {
      if (stdinClosed || dead) throw new ProcessClosedError('stdin closed');
      for (const piece of rechunk(Buffer.from(chunk))) {
        if (!stdout.write(piece)) await new Promise((r) => stdout.once('drain', r));
      }
    },
    async closeStdin() {
      stdinClosed = true;
      finish({ code: 0, signal: null });
    },
    async kill(signal = 'SIGTERM') {
      finish({ code: null, signal });
    },
  };
}
