import type { SandboxError } from './errors.js';
import type { BoundSecret } from './secret-binding.js';

/**
 * The backend contract, version 1. A backend turns a {@link SandboxSpec} into a {@link Sandbox}
 * that runs processes with streaming stdio. Bytes are bytes: nothing here decodes text.
 */

export const SPECIFICATION_VERSION = 'sandbox-backend-v1' as const;
export type SpecificationVersion = typeof SPECIFICATION_VERSION;

/** How strong a boundary a backend puts around the server, strongest first. */
export type IsolationLevel = 'microvm' | 'os' | 'language' | 'none';

export const ISOLATION_LEVELS: readonly IsolationLevel[] = ['none', 'language', 'os', 'microvm'];

/** Orders isolation levels: `none` < `language` < `os` < `microvm`. */
export function isolationRank(level: IsolationLevel): number {
  return ISOLATION_LEVELS.indexOf(level);
}

export interface SandboxBackend {
  readonly specificationVersion: SpecificationVersion;
  /** Short name: `local`, `e2b`, `none`, `fake`, … */
  readonly id: string;
  readonly isolation: IsolationLevel;
  /**
   * Every connection of the sandbox passes this host's egress proxy, set up with
   * `spec.network.secrets`, which puts a bound secret's real value on the wire (`--secret`). Only a
   * backend that declares it is given secrets to bind; an id such as `local` proves nothing.
   */
  readonly substitutesSecrets?: true;
  /** One line a human reads at start, e.g. "bubblewrap 0.8.0: user, pid, net, mount namespaces". */
  describe?(): string;
  create(spec: SandboxSpec, options?: CreateOptions): Promise<Sandbox>;
}

export interface CreateOptions {
  signal?: AbortSignal;
}

export interface SandboxSpec {
  /** A name for this session, used in sandbox metadata and traces. */
  readonly sessionId: string;
  /** The complete environment of processes in the sandbox: the allowlist and nothing else. */
  readonly env: Readonly<Record<string, string>>;
  /** Hard lifetime in milliseconds. The backend reaps the sandbox when it elapses, whatever the host does. */
  readonly ttlMs: number;
  /** Host paths made visible (or copied) inside. */
  readonly mounts?: readonly MountSpec[];
  /** Egress grants; empty or absent means no network. */
  readonly network?: NetworkSpec;
  readonly limits?: ResourceLimits;
  /** Called with every decision the backend takes that a trace should hold (proxy, limits). */
  readonly onEvent?: (event: SandboxEvent) => void;
}

export interface MountSpec {
  readonly hostPath: string;
  readonly sandboxPath: string;
  /**
   * `ro`/`rw`: the host path itself, live. `copy`: a private, writable copy taken when the sandbox
   * is created (regular files and directories; symlinks are never followed); nothing comes back.
   * A backend that copies every mount treats all three as copies.
   */
  readonly mode: 'ro' | 'rw' | 'copy';
}

/**
 * Caps on a `copy` mount (files and bytes those of `mcp-sandbox` 0.2's `--fs`): checked before
 * anything is copied, and again while copying. Directories, entries and depth are capped too: a
 * tree of empty directories costs no file and no byte, but disk and time.
 */
export const COPY_LIMITS = {
  maxFiles: 2000,
  maxBytes: 50 * 1024 * 1024,
  maxDirs: 2000,
  maxEntries: 10_000,
  maxDepth: 128,
} as const;

export interface NetworkSpec {
  /** `host`, `host:port` or `*.suffix[:port]`; `*` alone means unrestricted. */
  readonly allow: readonly string[];
  /**
   * `--secret`: the sandbox's env holds each stand-in; a backend that takes these substitutes the
   * real value on the wire to the bound hosts. A backend that cannot must refuse a spec with any.
   */
  readonly secrets?: readonly BoundSecret[];
}

export interface ResourceLimits {
  readonly maxProcesses?: number;
  readonly memoryBytes?: number;
  readonly openFiles?: number;
}

export interface SandboxEvent {
  readonly type: string;
  readonly [key: string]: unknown;
}

export interface ExecOptions {
  /** Extra variables for this process only, on top of the spec's env. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Egress for this process only, replacing the spec's (an install step that may reach a registry). */
  readonly network?: NetworkSpec;
  /**
   * `setup`: a `--setup` step. A backend may run it as it runs its own install steps (a package
   * registry reachable, none of the server's secrets or files) rather than with the server's grants.
   */
  readonly purpose?: 'setup';
}

export interface PrepareOptions {
  /** Where progress and the output of install steps go (the bridge sends it to stderr). */
  readonly stderr: (chunk: Uint8Array) => void;
  readonly signal?: AbortSignal;
}

export interface Sandbox {
  readonly id: string;
  exec(command: readonly string[], options?: ExecOptions): Promise<SandboxProcess>;
  /**
   * Optional: turn the server command into what to exec, doing any install work first
   * (`npx -y pkg` becomes an install into a cache and the installed binary). The bridge calls it
   * after `--setup` and before the server starts; client messages wait meanwhile.
   */
  prepare?(command: readonly string[], options: PrepareOptions): Promise<readonly string[]>;
  /** Idempotent: kills what still runs and releases everything. */
  close(): Promise<void>;
}

export interface ExitStatus {
  /** The exit code, or null when the process died from a signal. */
  readonly code: number | null;
  readonly signal: string | null;
  /**
   * Set when the process did not end by itself but was lost with its sandbox (a dropped stream,
   * an expired VM): the bridge reports a sandbox failure instead of the process's status.
   */
  readonly error?: SandboxError;
}

export type KillSignal = 'SIGTERM' | 'SIGKILL';

export interface SandboxProcess {
  readonly stdout: AsyncIterable<Uint8Array>;
  readonly stderr: AsyncIterable<Uint8Array>;
  /** Serialized: chunks arrive in call order. Resolves once the chunk is accepted downstream. */
  write(chunk: Uint8Array): Promise<void>;
  closeStdin(): Promise<void>;
  kill(signal?: KillSignal): Promise<void>;
  readonly exit: Promise<ExitStatus>;
}

/** What a backend module exports so that `--backend <module>` can load it. */
export interface BackendModule {
  createBackend(options?: BackendFactoryOptions): SandboxBackend;
}

/** Options every factory accepts; backends read the ones they know and ignore the rest. */
export interface BackendFactoryOptions {
  /** The host environment, for credentials the backend itself needs (never forwarded). */
  readonly hostEnv?: Readonly<Record<string, string | undefined>>;
  readonly logger?: import('./logger.js').Logger;
  /** Backend-specific settings from `--backend-option key=value` and dedicated flags. */
  readonly settings?: Readonly<Record<string, string>>;
}
