/**
 * One base error with a stable string `code`; every failure mcp-sandbox reports is a subclass.
 * Backends wrap foreign errors (SDK, OS) in one of these and keep the original as `cause`.
 */
export class SandboxError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }

  /**
   * Also true for an error of another copy of core: the `mcp-sandbox` binary bundles its own, while
   * a custom backend throws the errors of the core it installed. Such an error matches a class by
   * its brand and the class's name (`instanceof UsageError` finds a `UsageError` of either copy).
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== 'object' || value === null || !(BRAND in value)) return false;
    if (typeof (value as { code?: unknown }).code !== 'string') return false;
    for (let proto = Object.getPrototypeOf(value); proto !== null; proto = Object.getPrototypeOf(proto)) {
      if (Object.hasOwn(proto, 'constructor') && proto.constructor?.name === this.name) return true;
    }
    return false;
  }
}

/** The same symbol in every copy of core (Symbol.for), on the prototype of SandboxError. */
const BRAND: unique symbol = Symbol.for('@mcpsandbox/core.SandboxError');
Object.defineProperty(SandboxError.prototype, BRAND, { value: true });

/** The user asked for something that cannot work (bad flag, missing variable, bad module). */
export class UsageError extends SandboxError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_USAGE', message, options);
  }
}

/** A backend cannot run on this machine (missing tool, kernel feature, credential). */
export class BackendUnavailableError extends SandboxError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'E_BACKEND_UNAVAILABLE', message, options);
  }
}

/** A custom backend module does not implement the contract version this host speaks. */
export class BackendVersionError extends SandboxError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_BACKEND_VERSION', message, options);
  }
}

/** Creating, or talking to, the sandbox failed. */
export class SandboxFailureError extends SandboxError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'E_SANDBOX', message, options);
  }
}

/** A `--setup` step exited non-zero. */
export class SetupFailedError extends SandboxError {
  readonly exitCode: number | null;

  constructor(message: string, exitCode: number | null, options?: { cause?: unknown }) {
    super('E_SETUP_FAILED', message, options);
    this.exitCode = exitCode;
  }
}

/** A process was used after its stdin was closed or after it exited. */
export class ProcessClosedError extends SandboxError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_PROCESS_CLOSED', message, options);
  }
}

/** The operation was aborted through its AbortSignal. */
export class AbortedError extends SandboxError {
  constructor(message = 'aborted', options?: { cause?: unknown }) {
    super('E_ABORTED', message, options);
  }
}

export function isSandboxError(value: unknown): value is SandboxError {
  return value instanceof SandboxError;
}
