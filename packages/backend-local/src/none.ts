import { randomUUID } from 'node:crypto';
import {
  armTtl,
  type BackendFactoryOptions,
  type ExecOptions,
  killAll,
  type Sandbox,
  type SandboxBackend,
  SandboxFailureError,
  type SandboxSpec,
  SPECIFICATION_VERSION,
} from '@mcpsandbox/core';
import { type SpawnedProcess, spawnProcess } from './child-process.js';

/** Host variables a plain child process gets besides the allowlist, so that commands resolve. */
export const NONE_BASELINE_ENV = ['PATH', 'HOME', 'TMPDIR', 'LANG'] as const;

/**
 * The `none` backend: a plain child process with no isolation at all. For trusted servers,
 * for tracing, and for measuring the bridge alone. The host's files and network are reachable.
 */
export function createNoneBackend(options: BackendFactoryOptions = {}): SandboxBackend {
  const hostEnv = options.hostEnv ?? process.env;
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'none',
    isolation: 'none',
    describe: () => 'NOT SANDBOXED: a plain child process with your files, network and user',
    async create(spec) {
      const baseline: Record<string, string> = {};
      for (const key of NONE_BASELINE_ENV) {
        const value = hostEnv[key];
        if (value !== undefined) baseline[key] = value;
      }
      return new ChildProcessSandbox(spec, baseline);
    },
  };
}

class ChildProcessSandbox implements Sandbox {
  readonly id = `none-${randomUUID()}`;
  readonly #spec: SandboxSpec;
  readonly #baseline: Record<string, string>;
  readonly #live = new Set<SpawnedProcess>();
  readonly #disarmTtl: () => void;
  #closing: Promise<void> | undefined;

  constructor(spec: SandboxSpec, baseline: Record<string, string>) {
    this.#spec = spec;
    this.#baseline = baseline;
    this.#disarmTtl = armTtl(spec, () => void this.close());
  }

  async exec(command: readonly string[], options: ExecOptions = {}) {
    if (this.#closing) throw new SandboxFailureError('sandbox is closed', { code: 'E_SANDBOX_CLOSED' });
    const env = { ...this.#baseline, ...this.#spec.env, ...options.env };
    const proc = await spawnProcess(command, { env, ...(options.cwd ? { cwd: options.cwd } : {}) });
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
    const procs = [...this.#live];
    this.#live.clear();
    await killAll(procs);
  }
}
