import { randomUUID } from 'node:crypto';
import {
  AbortedError,
  armTtl,
  type BackendFactoryOptions,
  type ExecOptions,
  killAll,
  type Logger,
  type Sandbox,
  type SandboxBackend,
  SandboxFailureError,
  type SandboxProcess,
  type SandboxSpec,
  SPECIFICATION_VERSION,
  silentLogger,
  UsageError,
} from '@mcpsandbox/core';
import { DEFAULT_HIGH_WATER_MARK } from './channel.js';
import { fakeMcpServer } from './fake-mcp-server.js';
import { conformanceProbe } from './probe.js';
import { FakeProcess } from './process.js';
import type { FakePrograms } from './program.js';

export interface FakeBackendOptions extends BackendFactoryOptions {
  /**
   * Extra programs by command name. A name that is also a built-in (`fake-mcp-server`,
   * `conformance-probe`) replaces the built-in.
   */
  readonly programs?: FakePrograms;
  /**
   * Bytes a stream buffers before its writer waits (default 64 KiB, an OS pipe's size). Also read
   * from `settings.highWaterMark` when the backend is loaded as a module.
   */
  readonly highWaterMark?: number;
}

/** The built-in programs, by command name. */
export const BUILTIN_PROGRAMS: FakePrograms = Object.freeze({
  'fake-mcp-server': fakeMcpServer,
  'conformance-probe': conformanceProbe,
});

/**
 * The `fake` backend: programs are async functions in this process, stdio are bounded in-memory
 * pipes. No isolation at all; for tests, examples and as a model for backend authors.
 * Synchronous and free of I/O, like every factory.
 */
export function createFakeBackend(options: FakeBackendOptions = {}): SandboxBackend {
  const programs: FakePrograms = { ...BUILTIN_PROGRAMS, ...options.programs };
  const highWaterMark = options.highWaterMark ?? parseHighWaterMark(options.settings?.highWaterMark);
  const logger = options.logger ?? silentLogger;
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'fake',
    isolation: 'none',
    describe: () => 'NOT SANDBOXED: in-memory fake programs in this process, for tests',
    async create(spec, createOptions) {
      if (createOptions?.signal?.aborted) throw new AbortedError('sandbox creation aborted');
      return new FakeSandbox(spec, programs, highWaterMark, logger);
    },
  };
}

/** The module entry point that `--backend @mcpsandbox/backend-fake` loads. */
export function createBackend(options?: BackendFactoryOptions): SandboxBackend {
  return createFakeBackend(options);
}

function parseHighWaterMark(value: string | undefined): number {
  if (value === undefined) return DEFAULT_HIGH_WATER_MARK;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) {
    throw new UsageError(`highWaterMark must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return parsed;
}

class FakeSandbox implements Sandbox {
  readonly id = `fake-${randomUUID()}`;
  readonly #spec: SandboxSpec;
  readonly #programs: FakePrograms;
  readonly #highWaterMark: number;
  readonly #logger: Logger;
  readonly #live = new Set<FakeProcess>();
  readonly #disarmTtl: () => void;
  #closing: Promise<void> | undefined;

  constructor(spec: SandboxSpec, programs: FakePrograms, highWaterMark: number, logger: Logger) {
    this.#spec = spec;
    this.#programs = programs;
    this.#highWaterMark = highWaterMark;
    this.#logger = logger;
    this.#disarmTtl = armTtl(spec, () => void this.close());
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<SandboxProcess> {
    if (this.#closing) throw new SandboxFailureError('sandbox is closed', { code: 'E_SANDBOX_CLOSED' });
    const name = command[0];
    if (name === undefined || name === '') throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
    // Own properties only: `toString` or `__proto__` are not programs.
    const program = Object.hasOwn(this.#programs, name) ? this.#programs[name] : undefined;
    if (!program) {
      throw new SandboxFailureError(`command not found: ${name}`, { code: 'E_COMMAND_NOT_FOUND' });
    }
    const proc = new FakeProcess(program, {
      argv: command,
      env: { ...this.#spec.env, ...options.env },
      cwd: options.cwd,
      highWaterMark: this.#highWaterMark,
      logger: this.#logger,
    });
    this.#live.add(proc);
    void proc.exit.then(() => this.#live.delete(proc));
    return proc;
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#disarmTtl();
    const procs = [...this.#live];
    this.#live.clear();
    await killAll(procs);
  }
}
