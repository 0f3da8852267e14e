import { constants } from 'node:os';
import type { ExitStatus } from './contract.js';

/**
 * Exit codes of `mcp-sandbox run`. Otherwise the server's own code, or 128 + signal number when
 * the server died from a signal the bridge did not send.
 */
export const ExitCode = {
  ok: 0,
  /** Bad flags or arguments; nothing was started. */
  usage: 2,
  /** The session's TTL elapsed. */
  ttlExpired: 124,
  /** The sandbox could not be created or set up, or the backend is unavailable here. */
  sandboxFailure: 125,
  /** The server command exists but cannot be executed. */
  cannotExecute: 126,
  /** The server command was not found in the sandbox. */
  commandNotFound: 127,
} as const;

export function signalNumber(signal: string): number {
  return (constants.signals as Record<string, number | undefined>)[signal] ?? 0;
}

export function exitCodeOf(status: ExitStatus): number {
  if (status.code !== null) return status.code;
  return 128 + (status.signal ? signalNumber(status.signal) : 0);
}
