/**
 * The promise suite: the attacks that hold an OS backend's promises, run against any backend
 * from one place, as the conformance suite does for the protocol. Each backend package's tests
 * call {@link runPromiseSuite} with its factory and the built binary. The cases that need Linux
 * (/proc, set-id calls, setpriv) are skipped elsewhere; the rest run on macOS too.
 */
import { registerBridgeCases } from './bridge-cases.js';
import type { PromiseSuiteOptions } from './options.js';
import { registerSessionCases } from './session-cases.js';

export type { PromiseSuiteOptions } from './options.js';

/** Registers the promise suite with vitest. Call it at the top level of a test file. */
export function runPromiseSuite(options: PromiseSuiteOptions): void {
  registerSessionCases(options);
  registerBridgeCases(options);
}
