import type { BackendFactoryOptions, SandboxBackend } from '@mcpsandbox/core';

/** What the promise suite is run with: the backend under test and the built binary. */
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
