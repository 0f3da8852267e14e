import type { ExitStatus } from '@mcpsandbox/core';

/** Go's wording for signals in envd's "signal: <name>" status. */
const SIGNALS: Record<string, string> = {
  hangup: 'SIGHUP',
  interrupt: 'SIGINT',
  quit: 'SIGQUIT',
  'illegal instruction': 'SIGILL',
  'trace/breakpoint trap': 'SIGTRAP',
  aborted: 'SIGABRT',
  'bus error': 'SIGBUS',
  'floating point exception': 'SIGFPE',
  killed: 'SIGKILL',
  'user defined signal 1': 'SIGUSR1',
  'segmentation fault': 'SIGSEGV',
  'user defined signal 2': 'SIGUSR2',
  'broken pipe': 'SIGPIPE',
  'alarm clock': 'SIGALRM',
  terminated: 'SIGTERM',
};

/** What a status reports when envd's is out of range or names no known signal. */
const UNKNOWN_STATUS_CODE = 125;

/**
 * envd's end event to the contract's status. A non-zero code stays a non-zero code; a code
 * outside 0–255 or a signal name outside the list (both chosen by whoever controls envd) becomes
 * 125, so neither can pass for success nor carry text to the terminal.
 */
export function toExitStatus(end: { exitCode: number; exited: boolean; status: string }): ExitStatus {
  const signalled = /^signal: (.+?)(?: \(core dumped\))?$/.exec(end.status);
  if (!end.exited && signalled) {
    const key = signalled[1] as string;
    const name = Object.hasOwn(SIGNALS, key) ? SIGNALS[key] : undefined;
    return name ? { code: null, signal: name } : { code: UNKNOWN_STATUS_CODE, signal: null };
  }
  const code = end.exitCode;
  const valid = Number.isInteger(code) && code >= 0 && code <= 255;
  return { code: valid ? code : UNKNOWN_STATUS_CODE, signal: null };
}
