/** What a bridge session is given and what it returns (bridge.ts runs it). */
import type { Readable, Writable } from 'node:stream';
import type { ExitStatus, SandboxBackend, SandboxSpec } from './contract.js';
import type { SandboxError } from './errors.js';
import type { Logger } from './logger.js';
import type { MountHint } from './path-hints.js';
import type { ToolPolicy } from './policy.js';
import type { SecretSet } from './secrets.js';
import type { TraceSink } from './trace.js';

export interface ShutdownTiming {
  /** After client EOF: how long to wait for replies still owed before asking the server to stop. */
  readonly drainMs: number;
  /** Then how long the server may take to exit on its own (many exit on stdin EOF). */
  readonly exitGraceMs: number;
  /** Between SIGTERM and SIGKILL. */
  readonly killGraceMs: number;
}

export const DEFAULT_SHUTDOWN_TIMING: ShutdownTiming = {
  drainMs: 10_000,
  exitGraceMs: 500,
  killGraceMs: 2_000,
};

export interface BridgeOptions {
  readonly backend: SandboxBackend;
  /** The server command, run in the sandbox. */
  readonly command: readonly string[];
  /** Shell commands run in the sandbox, in order, before the server. */
  readonly setup?: readonly string[];
  readonly spec: Omit<SandboxSpec, 'onEvent'>;
  /** Values redacted from the trace and from forwarded stderr. */
  readonly secrets?: readonly string[] | SecretSet;
  /**
   * Host variables kept from the server, by name: when the server's stderr or an error it returns
   * names one, stderr says which `--env` flag passes it.
   */
  readonly withheldEnv?: readonly string[];
  /** The backend substitutes `--secret`: a withheld variable of a known API is hinted as `--secret`. */
  readonly secretHints?: boolean;
  /**
   * Host paths the server's command line names that the sandbox does not show: when the server's
   * stderr or an error it returns names one, stderr says which `--mount` shows it.
   */
  readonly mountHints?: readonly MountHint[];
  /** The client's side: what it sends. */
  readonly input: Readable;
  /** The client's side: protocol only. */
  readonly output: Writable;
  /** The server's stderr, setup output and diverted stdout lines go here. */
  readonly errorOutput: Writable;
  readonly logger: Logger;
  readonly trace?: TraceSink;
  readonly maxLineBytes?: number;
  readonly timing?: Partial<ShutdownTiming>;
  /** Tool filtering and pinning: the only case where the bridge rewrites a message. */
  readonly policy?: ToolPolicy;
}

export type EndReason =
  | 'server-exit'
  | 'client-eof'
  | 'client-gone'
  | 'ttl'
  | 'signal'
  | 'sandbox-failure'
  | 'bridge-crash';

export interface BridgeResult {
  readonly exitCode: number;
  readonly reason: EndReason;
  /** How the server process ended, when it ran. */
  readonly serverStatus?: ExitStatus;
  readonly error?: SandboxError;
}

export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

export interface BridgeSession {
  readonly done: Promise<BridgeResult>;
  /**
   * Settles once the server's process has started (after the sandbox, setup steps and any
   * install), or the session ended first: true when the server started.
   */
  readonly started: Promise<boolean>;
  /** Ends the session as if the bridge received `signal`. Idempotent. */
  stop(signal: StopSignal): void;
  /**
   * Ends the session after a fault in the host process (an uncaught exception, an unhandled
   * rejection): records `bridge-crash`, stops the server, answers every request in flight with
   * -32000 and closes the sandbox; the result's exit code is 125. Idempotent.
   */
  crash(error: unknown): void;
}
