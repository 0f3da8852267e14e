/** How a bridge session ended, told to the client (error answers) and to the shell (exit code). */
import type { EndReason } from './bridge-types.js';
import type { ExitStatus } from './contract.js';
import { SandboxError } from './errors.js';
import { ExitCode, exitCodeOf, signalNumber } from './exit-codes.js';

export interface Ending {
  readonly reason: EndReason;
  readonly detail?: unknown;
}

/** The message of the error answer given for a request the server will not answer. */
export function unavailableMessage(ending: Ending | undefined, status: ExitStatus | undefined): string {
  if (ending?.reason === 'ttl') return `mcp-sandbox: the session's TTL expired before the server answered`;
  if (ending?.reason === 'signal') return `mcp-sandbox: the session was stopped (${String(ending.detail)})`;
  if (ending?.reason === 'sandbox-failure') {
    return `mcp-sandbox: the sandbox failed: ${errorMessage(ending.detail)}`;
  }
  if (ending?.reason === 'bridge-crash')
    return 'mcp-sandbox: internal error in the bridge; the session was closed';
  if (status?.error) return `mcp-sandbox: the sandbox failed: ${status.error.message}`;
  if (status) {
    const how = status.code !== null ? `with code ${status.code}` : `from ${status.signal}`;
    return `mcp-sandbox: the server exited ${how} before answering`;
  }
  return 'mcp-sandbox: the server ended before answering';
}

/**
 * The session's exit code. `status` is how the server ended, when it ran; `signalledByUs` that the
 * bridge had to stop it, so its own exit code does not count.
 */
export function sessionExitCode(
  { reason, detail }: Ending,
  status: ExitStatus | undefined,
  signalledByUs: boolean,
): number {
  switch (reason) {
    case 'ttl':
      return ExitCode.ttlExpired;
    case 'signal':
      return 128 + signalNumber(String(detail));
    case 'bridge-crash':
      return ExitCode.sandboxFailure;
    case 'sandbox-failure': {
      const code = errorCode(detail);
      // A backend that finds the user's input wanting only once it is asked (a missing key).
      if (code === 'E_USAGE') return ExitCode.usage;
      if (code === 'E_COMMAND_NOT_FOUND') return ExitCode.commandNotFound;
      if (code === 'E_CANNOT_EXECUTE') return ExitCode.cannotExecute;
      return ExitCode.sandboxFailure;
    }
    case 'server-exit':
      if (!status || status.error) return ExitCode.sandboxFailure;
      return exitCodeOf(status);
    default:
      // The client ended the session, then the sandbox failed under the server: still a failure.
      if (status?.error) return ExitCode.sandboxFailure;
      // The server's own exit counts unless we had to stop it.
      return status && !signalledByUs ? exitCodeOf(status) : ExitCode.ok;
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return 'a value that cannot be printed';
  }
}

/** One line for a terminal: control characters (bar tab) shown as `?`. */
export function printable(text: string): string {
  return text.replace(/[^\t\x20-\x7e\u00a0-\uffff]/g, '?');
}

export function errorCode(error: unknown): string | undefined {
  return error instanceof SandboxError ? error.code : undefined;
}
