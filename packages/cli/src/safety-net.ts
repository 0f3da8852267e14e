import { type BridgeResult, type BridgeSession, ExitCode, type Logger, SandboxError } from '@mcpsandbox/core';
import type { FaultEvent, FaultSource } from './options.js';

const FAULT_EVENTS: readonly FaultEvent[] = ['uncaughtException', 'unhandledRejection'];

/** After a fault, how long the session may take to close its sandbox before the command ends anyway. */
export const CRASH_DEADLINE_MS = 20_000;

/** A fault in this process ended the command before a session existed. */
export class HostFaultError extends SandboxError {
  constructor(cause: unknown) {
    super('E_BRIDGE_CRASH', `internal error: ${describe(cause)}`, { cause });
  }
}

/**
 * The process-wide safety net around one command that starts a session (DESIGN §6). Whatever
 * throws uncaught or rejects unhandled in this process meanwhile, in the bridge, a backend or the
 * proxy, the session is crashed through core's bridge, which records `bridge-crash`, answers the
 * requests in flight with -32000 and closes the sandbox; the command then exits 125. A fault before
 * the session exists ends the command with 125 too. Without a fault source (tests, embedding), it
 * does nothing.
 */
export class SafetyNet {
  readonly #source: FaultSource | undefined;
  readonly #logger: Logger;
  readonly #listener = (error: unknown) => this.#onFault(error);
  #session: BridgeSession | undefined;
  #fault: { readonly error: unknown } | undefined;
  #faulted!: (error: unknown) => void;
  readonly #faultedPromise = new Promise<unknown>((resolve) => {
    this.#faulted = resolve;
  });

  constructor(source: FaultSource | undefined, logger: Logger) {
    this.#source = source;
    this.#logger = logger;
    for (const event of FAULT_EVENTS) source?.on(event, this.#listener);
  }

  /** Awaits `work`, or throws HostFaultError as soon as a fault happens first. */
  async guard<T>(work: Promise<T>): Promise<T> {
    const fault = this.#faultedPromise.then((error) => {
      throw new HostFaultError(error);
    });
    return Promise.race([work, fault]);
  }

  /** The session a fault crashes from now on (at once, if one already happened). */
  attach(session: BridgeSession): void {
    this.#session = session;
    if (this.#fault) session.crash(this.#fault.error);
  }

  /** The session's result; after a fault, an exit code of 125 at the latest `deadlineMs` later. */
  async result(session: BridgeSession, deadlineMs = CRASH_DEADLINE_MS): Promise<BridgeResult> {
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const deadline = this.#faultedPromise.then(
      () =>
        new Promise<BridgeResult>((resolve) => {
          if (settled) return;
          timer = setTimeout(() => {
            this.#logger.error('the sandbox did not close in time after an internal error; exiting');
            resolve({ exitCode: ExitCode.sandboxFailure, reason: 'bridge-crash' });
          }, deadlineMs);
        }),
    );
    try {
      const result = await Promise.race([session.done, deadline]);
      return this.#fault ? { ...result, exitCode: ExitCode.sandboxFailure } : result;
    } finally {
      settled = true;
      clearTimeout(timer);
    }
  }

  dispose(): void {
    for (const event of FAULT_EVENTS) this.#source?.off(event, this.#listener);
  }

  #onFault(error: unknown): void {
    if (this.#fault) {
      this.#logger.debug(`another internal error while closing: ${describe(error)}`);
      return;
    }
    this.#fault = { error };
    this.#faulted(error);
    if (this.#session) this.#session.crash(error);
  }
}

function describe(error: unknown): string {
  try {
    const text = error instanceof Error ? error.message : String(error);
    return text.replace(/[^\t\x20-\x7e\u00a0-\uffff]/g, '?');
  } catch {
    return 'a value that cannot be printed';
  }
}
