import type { Readable, Writable } from 'node:stream';
import type { StopSignal } from '@mcpsandbox/core';
import type { BackendRegistry } from './backends.js';
import type { SelfBinary } from './config/launcher.js';
import type { DoctorSetup } from './doctor/types.js';
import type { StateStore } from './state-store.js';

export interface SignalSource {
  on(signal: StopSignal, listener: () => void): unknown;
  off(signal: StopSignal, listener: () => void): unknown;
}

export type FaultEvent = 'uncaughtException' | 'unhandledRejection';

/** Where process-wide faults are reported (`process` in the binary). */
export interface FaultSource {
  on(event: FaultEvent, listener: (error: unknown) => void): unknown;
  off(event: FaultEvent, listener: (error: unknown) => void): unknown;
}

/** Everything the program touches of the outside world, injected so that tests can drive it. */
export interface CliIo {
  readonly stdin: Readable;
  /** Protocol only. */
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly signals?: SignalSource;
  /** Uncaught exceptions and unhandled rejections: a session ends on one, with exit code 125. */
  readonly faults?: FaultSource;
}

export interface CliOptions {
  readonly backends: BackendRegistry;
  /** The backend used when `--backend` is not given. */
  readonly defaultBackend: string;
  readonly version: string;
  /**
   * The running binary, for the launcher `wrap` writes by default: without it, `wrap` writes
   * `npx -y mcp-sandbox@<version>`.
   */
  readonly self?: SelfBinary;
  readonly io: CliIo;
  /**
   * What `mcp-sandbox doctor` checks and how it probes each backend; defaults read the real machine.
   * A function is called only when doctor runs, so that the code behind the setup loads with it.
   */
  readonly doctor?: DoctorSetup | (() => Promise<DoctorSetup>);
  /** Named state (`run --state`, `mcp-sandbox state`); without it the state command says so. */
  readonly state?: StateStore;
  /** The sandbox's own install cache and the installs under way in it, for `ls` and `doctor`. */
  readonly installCache?: () => Promise<InstallCacheView | undefined>;
  /** `process.platform` of this machine (default): on 'win32', `local` runs inside WSL2. */
  readonly platform?: string;
  /** Runs `wsl.exe -l -v` (default: the real one), for what `run` says on Windows. */
  readonly wslList?: () => Promise<{ started: boolean; code: number | null; stdout: string }>;
}

/** What the install cache holds (complete entries) and what is being installed into it. */
export interface InstallCacheView {
  readonly root: string;
  readonly entries: number;
  readonly bytes: number;
  readonly installing: readonly {
    readonly spec: string;
    readonly pid: number;
    readonly since: string;
  }[];
}
