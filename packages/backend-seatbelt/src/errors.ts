import { SandboxError } from '@mcpsandbox/core';

/**
 * A path the Seatbelt profile cannot carry as it is: not absolute and normal, a control
 * character, or a spelling the profile denies anyway. The message says which and what to do.
 */
export class SeatbeltPathError extends SandboxError {
  constructor(message: string) {
    super('E_SEATBELT_PATH', message);
  }
}

/** A profile text the evaluator cannot read (a test or tool fed it something that is not SBPL). */
export class SbplSyntaxError extends SandboxError {
  constructor(message: string) {
    super('E_SBPL_SYNTAX', message);
  }
}
