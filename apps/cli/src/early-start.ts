/**
 * `run --backend none` starts its server before the program has loaded: the server's own start
 * then overlaps the bridge's (tens of milliseconds of module loading). Only a command line of the
 * plainest shape qualifies; the program still parses and checks it as always, and the none
 * backend uses the early server only when the command and environment it would start are exactly
 * the early ones (`EarlyStart.take`). Anything else ends the early server unused.
 */

import { constants } from 'node:os';
import type { EarlyStart } from '@mcpsandbox/backend-local/none';
import { createStderrLogger, parseDuration, resolveEnvAllowlist } from '@mcpsandbox/core';

/** What an early start needs of the command line: the server's argv and the `--env` entries. */
export interface EarlyRun {
  readonly command: readonly string[];
  readonly env: readonly string[];
  readonly ttl?: string;
}

/** Flags with a value that an early start may see; `--backend` must be `none`. */
const VALUED = new Map([
  ['--backend', 'backend'],
  ['-b', 'backend'],
  ['--env', 'env'],
  ['-e', 'env'],
  ['--ttl', 'ttl'],
  ['--trace', 'other'],
]);
const BARE = new Set(['-q', '--quiet']);

/**
 * `run [--backend none | -b none] [--env|-e KEY[=value]]… [--ttl d] [--trace f] [-q] -- command…`,
 * each flag and value its own word; undefined for anything else (the program then starts as ever).
 */
export function earlyRun(args: readonly string[]): EarlyRun | undefined {
  if (args[0] !== 'run') return undefined;
  const env: string[] = [];
  let backend: string | undefined;
  let ttl: string | undefined;
  for (let i = 1; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      const command = args.slice(i + 1);
      if (backend !== 'none' || command.length === 0) return undefined;
      return ttl === undefined ? { command, env } : { command, env, ttl };
    }
    if (BARE.has(arg)) continue;
    const kind = VALUED.get(arg);
    const value = args[i + 1];
    if (!kind || value === undefined || value.startsWith('-')) return undefined;
    i += 1;
    if (kind === 'backend') {
      if (backend !== undefined) return undefined;
      backend = value;
    } else if (kind === 'env') env.push(value);
    else if (kind === 'ttl') ttl = value;
  }
  return undefined;
}

let pending: EarlyStart | undefined;

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Until the program takes over: a stop ends the early server and the program at once, as a
 * session would. At once: a program left to go on would start a server of its own.
 */
function onStop(signal: NodeJS.Signals): void {
  if (!pending) return; // taken: the session's own handler stops it
  pending.killNow();
  process.exit(128 + (constants.signals[signal] ?? 0));
}

function stopListening(): void {
  for (const signal of STOP_SIGNALS) process.off(signal, onStop);
  process.off('exit', onExit);
}

/** If the program dies before its backend took the server, the server goes with it. */
function onExit(): void {
  pending?.killNow();
}

/** Starts the server of a qualifying `run --backend none` command line; else does nothing. */
export async function startEarly(
  args: readonly string[],
  hostEnv: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  // Ending it unused needs its process group: POSIX only.
  const run = process.platform === 'win32' ? undefined : earlyRun(args);
  if (!run) return;
  let serverEnv: Record<string, string>;
  try {
    serverEnv = resolveEnvAllowlist(run.env, hostEnv).env;
    if (run.ttl !== undefined) parseDuration(run.ttl, '--ttl');
  } catch {
    return; // refused: the program says what is wrong, and no server has started
  }
  const { EarlyStart } = await import('@mcpsandbox/backend-local/none');
  // Listening before the server exists: a stop never finds it unowned.
  for (const signal of STOP_SIGNALS) process.once(signal, onStop);
  process.once('exit', onExit);
  pending = new EarlyStart(run.command, serverEnv, hostEnv);
}

/** The early server, for the none backend; once. Its sandbox owns it from here on. */
export function takeEarlyStart(): EarlyStart | undefined {
  const early = pending;
  pending = undefined;
  // Not at once: a signal with no listener at all would end the program by default, leaving the
  // server to no one. The session registers its own in the same turn of the event loop.
  setImmediate(stopListening);
  return early;
}

/** Ends an early server no backend took (a usage error, another command, another backend). */
export async function discardEarlyStart(): Promise<void> {
  const pid = await takeEarlyStart()?.discard();
  if (pid !== undefined) {
    createStderrLogger({ stream: process.stderr }).debug(
      `the server started early (pid ${pid}) was not used: ended it`,
    );
  }
}
