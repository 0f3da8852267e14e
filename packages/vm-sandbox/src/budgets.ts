/** Budgets of one sandbox, enforced by the worker's runtime and again by the parent. */
export interface Budgets {
  /** Console lines passed on. */
  readonly maxLogEvents: number;
  /** Console text passed on (UTF-16 code units). */
  readonly maxLogBytes: number;
  /** App errors (uncaught exceptions, unhandled rejections) passed on. */
  readonly maxErrorEvents: number;
  readonly maxErrorBytes: number;
  /** Calls to exposed host functions waiting for their answer. */
  readonly maxCallsInFlight: number;
  /** Their arguments (JSON text), together. */
  readonly maxCallBytesInFlight: number;
  /** Tools, resources and prompts an `mcp` app registers, together. */
  readonly maxRegistrations: number;
  /** Their metadata (JSON text), together. */
  readonly maxRegistrationBytes: number;
  /** Raw output (`io.write`) the host has not written yet. */
  readonly maxOutBytes: number;
}

export const DEFAULT_BUDGETS: Budgets = {
  maxLogEvents: 10_000,
  maxLogBytes: 1024 * 1024,
  maxErrorEvents: 1000,
  maxErrorBytes: 1024 * 1024,
  maxCallsInFlight: 64,
  maxCallBytesInFlight: 16 * 1024 * 1024,
  maxRegistrations: 1000,
  maxRegistrationBytes: 4 * 1024 * 1024,
  maxOutBytes: 32 * 1024 * 1024,
};
