/**
 * The promise suite: the attacks that hold an OS backend's promises, run against any backend
 * from one place, as the conformance suite does for the protocol. Each backend package's tests
 * call {@link runPromiseSuite} with its factory and the built binary. The cases that need Linux
 * (/proc, set-id calls, setpriv) are skipped elsewhere; the rest run on macOS too.
 */
import type { BackendFactoryOptions, SandboxBackend } from '@mcpsandbox/core';
import { registerBridgeCases } from './bridge-cases.js';
import { registerSessionCases } from './session-cases.js';

export interface PromiseSuiteOptions {
  /** Shown in the suite title. */
  readonly name: string;
  /** The backend under test, for a host environment (and settings) the suite chose. */
  readonly createBackend: (options: BackendFactoryOptions) => SandboxBackend;
  /** The built CLI's `bin.js` and the `--backend` value that picks this backend there. */
  readonly cli: { readonly bin: string; readonly backend: string };
  /** Per-case timeout in milliseconds (default 60 s). */
  readonly timeoutMs?: number;
}

/** Registers the promise suite with vitest. Call it at the top level of a test file. */
export function runPromiseSuite(options: PromiseSuiteOptions): void {
  registerSessionCases(options);
  registerBridgeCases(options);
}
