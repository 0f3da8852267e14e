import { UsageError } from '@mcpsandbox/core';

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** Quotes one argument for a POSIX shell; the result is always exactly that one word. */
export function shellQuote(arg: string): string {
  if (arg.includes('\0'))
    throw new UsageError('a command argument contains a NUL byte, which no shell can pass');
  if (SAFE.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command line the SDK hands to `bash -l -c`. `exec` makes the server the process envd
 * tracks, so signals reach it and its exit status is the one reported.
 */
export function toExecLine(argv: readonly string[]): string {
  if (argv.length === 0 || argv[0] === '') throw new UsageError('empty command');
  return `exec -- ${argv.map(shellQuote).join(' ')}`;
}
