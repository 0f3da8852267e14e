import { randomUUID } from 'node:crypto';
import {
  armTtl,
  type BackendFactoryOptions,
  type ExecOptions,
  killAll,
  type Logger,
  type Sandbox,
  type SandboxBackend,
  SandboxFailureError,
  type SandboxSpec,
  SPECIFICATION_VERSION,
} from '@mcpsandbox/core';
import { holdOutput, type SpawnedProcess, spawnProcess, startProcess } from './child-process.js';
import { sameArray, sameRecord } from './session/same.js';

/** Host variables a plain child process gets besides the allowlist, so that commands resolve. */
export const NONE_BASELINE_ENV = ['PATH', 'HOME', 'TMPDIR', 'LANG'] as const;

/**
 * The `none` backend: a plain child process with no isolation at all. For trusted servers,
 * for tracing, and for measuring the bridge alone. The host's files and network are reachable.
 */
export function createNoneBackend(
  options: BackendFactoryOptions & {
    /** Hands over a server started before the program loaded, if any ({@link EarlyStart}). */
    readonly takeEarlyStart?: () => EarlyStart | undefined;
  } = {},
): SandboxBackend {
  const hostEnv = options.hostEnv ?? process.env;
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'none',
    isolation: 'none',
    describe: () => 'NOT SANDBOXED: a plain child process with your files, network and user',
    async create(spec) {
      return new ChildProcessSandbox(spec, baselineEnv(hostEnv), options.takeEarlyStart?.(), options.logger);
    },
  };
}

function baselineEnv(hostEnv: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const baseline: Record<string, string> = {};
  for (const key of NONE_BASELINE_ENV) {
    const value = hostEnv[key];
    if (value !== undefined) baseline[key] = value;
  }
  return baseline;
}

/**
 * A server started before the program has loaded (the binary's early start, for `run --backend
 * none`): started as {@link ChildProcessSandbox.exec} would start it, and taken by the first exec
 * only if its command and environment are exactly these. Otherwise, and if no exec takes it, it is
 * killed before anything was written to it or read from it.
 */
export class EarlyStart {
  readonly #command: readonly string[];
  readonly #env: Readonly<Record<string, string>>;
  #proc: Promise<SpawnedProcess> | undefined;
  readonly #pid: number | undefined;
  #release: () => void = () => {};

  constructor(
    command: readonly string[],
    serverEnv: Readonly<Record<string, string>>,
    hostEnv: Readonly<Record<string, string | undefined>>,
  ) {
    this.#command = [...command];
    this.#env = { ...baselineEnv(hostEnv), ...serverEnv };
    const started = startProcess(this.#command, { env: { ...this.#env } });
    this.#pid = started.pid;
    // Its output waits for the session that takes it (holdOutput).
    this.#proc = started.proc.then((proc) => {
      this.#release = holdOutput(proc);
      return proc;
    });
    // A start that fails is reported by the exec that takes it, or by the fresh start after it.
    this.#proc.catch(() => {});
  }

  /** The process, once, for exactly this command and environment (else {@link discard} it). */
  take(
    command: readonly string[],
    env: Readonly<Record<string, string>>,
  ): Promise<SpawnedProcess> | undefined {
    if (!sameArray(command, this.#command) || !sameRecord(env, this.#env)) return undefined;
    const proc = this.#proc;
    this.#proc = undefined;
    return proc?.then((taken) => {
      this.#release();
      return taken;
    });
  }

  /** At exit or on a signal, when nothing can be awaited: kills its group unless an exec took it. */
  killNow(): void {
    if (!this.#proc || this.#pid === undefined) return;
    try {
      process.kill(-this.#pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  /** Kills the process (its group) unless an exec took it; resolves with its pid if it ran. */
  async discard(): Promise<number | undefined> {
    const proc = this.#proc;
    this.#proc = undefined;
    if (!proc) return undefined;
    try {
      const p = await proc;
      await p.kill('SIGKILL');
      await p.exit;
      return p.pid;
    } catch {
      return undefined; // it never started
    }
  }
}

class ChildProcessSandbox implements Sandbox {
  readonly id = `none-${randomUUID()}`;
  readonly #spec: SandboxSpec;
  readonly #baseline: Record<string, string>;
  readonly #live = new Set<SpawnedProcess>();
  readonly #disarmTtl: () => void;
  #early: EarlyStart | undefined;
  readonly #logger: Logger | undefined;
  #closing: Promise<void> | undefined;

  constructor(spec: SandboxSpec, baseline: Record<string, string>, early?: EarlyStart, logger?: Logger) {
    this.#spec = spec;
    this.#baseline = baseline;
    this.#early = early;
    this.#logger = logger;
    this.#disarmTtl = armTtl(spec, () => void this.close());
  }

  async exec(command: readonly string[], options: ExecOptions = {}) {
    if (this.#closing) throw new SandboxFailureError('sandbox is closed', { code: 'E_SANDBOX_CLOSED' });
    const env = { ...this.#baseline, ...this.#spec.env, ...options.env };
    const proc =
      this.#takeEarly(command, env, options) ??
      spawnProcess(command, { env, ...(options.cwd ? { cwd: options.cwd } : {}) });
    return this.#track(await proc);
  }

  /** The server the binary started early, for the first exec that would start exactly it. */
  #takeEarly(
    command: readonly string[],
    env: Record<string, string>,
    options: ExecOptions,
  ): Promise<SpawnedProcess> | undefined {
    const early = this.#early;
    this.#early = undefined;
    if (!early) return undefined;
    const taken = options.cwd === undefined ? early.take(command, env) : undefined;
    if (taken) this.#logger?.debug('the server was started early, while the program loaded');
    else {
      void early.discard();
      this.#logger?.debug('the server started early is not this start: ended it, starting again');
    }
    return taken;
  }

  #track(proc: SpawnedProcess): SpawnedProcess {
    this.#live.add(proc);
    void proc.exit.then(() => {
      // Keep the group reachable until close(): a daemonized grandchild may still run.
      if (this.#closing) this.#live.delete(proc);
    });
    return proc;
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#disarmTtl();
    await this.#early?.discard();
    const procs = [...this.#live];
    this.#live.clear();
    await killAll(procs);
  }
}
