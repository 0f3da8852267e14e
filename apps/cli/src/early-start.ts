/**
 * `run --backend none` starts its server, and `run` on `local` its sandbox and server, before the
 * program has loaded: the server's own start then overlaps the bridge's (tens of milliseconds of
 * module loading). Only a command line of the plainest shape qualifies; the program still parses
 * and checks it as always, and its backend uses the early start only when what it would start is
 * exactly the early one (`EarlyStart.take`, `EarlyLocalStart.adopt`). Anything else ends the
 * early start unused.
 */

import { constants } from 'node:os';
import type { EarlyLocalStart } from '@mcpsandbox/backend-local';
import type { EarlyStart } from '@mcpsandbox/backend-local/none';
import { createStderrLogger, DEFAULT_TTL, parseDuration, resolveEnvAllowlist } from '@mcpsandbox/core';

/** The program's default backend when neither `--backend` nor this variable names one (compat.ts). */
const BACKEND_ENV = 'MCP_SANDBOX_BACKEND';

/** What an early start needs of the command line: the server's argv and the `--env` entries. */
export interface EarlyRun {
  readonly backend: 'none' | 'local';
  readonly command: readonly string[];
  readonly env: readonly string[];
  readonly ttl?: string;
}

/** Flags with a value that an early start may see; `--backend` must be `none` or `local`. */
const VALUED = new Map([
  ['--backend', 'backend'],
  ['-b', 'backend'],
  ['--env', 'env'],
  ['-e', 'env'],
  ['--ttl', 'ttl'],
  ['--trace', 'other'],
]);
// `--wrapped` marks an entry `wrap` wrote; `run` ignores it.
const BARE = new Set(['-q', '--quiet', '--wrapped']);

/**
 * `run [--backend none|local | -b none|local] [--env|-e KEY[=value]]… [--ttl d] [--trace f] [-q]
 * -- command…`, each flag and value its own word; without `--backend`, the default backend is
 * `local` unless `MCP_SANDBOX_BACKEND` names another. Undefined for anything else (the program then
 * starts as ever).
 */
export function earlyRun(
  args: readonly string[],
  hostEnv: Readonly<Record<string, string | undefined>>,
): EarlyRun | undefined {
  if (args[0] !== 'run') return undefined;
  const env: string[] = [];
  let backend: string | undefined;
  let ttl: string | undefined;
  for (let i = 1; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      const command = args.slice(i + 1);
      const chosen = backend ?? (hostEnv[BACKEND_ENV]?.trim() || 'local');
      if ((chosen !== 'none' && chosen !== 'local') || command.length === 0) return undefined;
      return { backend: chosen, command, env, ...(ttl === undefined ? {} : { ttl }) };
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
let pendingLocal: EarlyLocalStart | undefined;

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Until the program takes over: a stop ends the early server and the program at once, as a
 * session would. At once: a program left to go on would start a server of its own.
 */
function onStop(signal: NodeJS.Signals): void {
  if (!pending && !pendingLocal) return; // taken: the session's own handler stops it
  onExit();
  process.exit(128 + (constants.signals[signal] ?? 0));
}

function stopListening(): void {
  for (const signal of STOP_SIGNALS) process.off(signal, onStop);
  process.off('exit', onExit);
}

/** If the program dies before its backend took the server, the server goes with it. */
function onExit(): void {
  pending?.killNow();
  pendingLocal?.killNow();
}

/**
 * Ending a none server unused needs its process group: POSIX only. `local` is bubblewrap on Linux
 * alone (elsewhere the program's `local` is another backend).
 */
function startsHere(backend: EarlyRun['backend']): boolean {
  return backend === 'local' ? process.platform === 'linux' : process.platform !== 'win32';
}

/** Starts the server (and, on local, its sandbox) of a qualifying `run` command line; else nothing. */
export async function startEarly(
  args: readonly string[],
  hostEnv: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  const run = earlyRun(args, hostEnv);
  if (!run || !startsHere(run.backend)) return;
  let serverEnv: Record<string, string>;
  let ttlMs: number;
  try {
    serverEnv = resolveEnvAllowlist(run.env, hostEnv).env;
    ttlMs = parseDuration(run.ttl ?? DEFAULT_TTL, '--ttl');
  } catch {
    return; // refused: the program says what is wrong, and no server has started
  }
  const none = run.backend === 'none' ? await import('@mcpsandbox/backend-local/none') : undefined;
  const local = run.backend === 'local' ? await import('@mcpsandbox/backend-local') : undefined;
  // Listening before the server exists: a stop never finds it unowned.
  for (const signal of STOP_SIGNALS) process.once(signal, onStop);
  process.once('exit', onExit);
  if (none) pending = new none.EarlyStart(run.command, serverEnv, hostEnv);
  if (local) {
    pendingLocal = new local.EarlyLocalStart({ command: run.command, env: serverEnv, ttlMs }, hostEnv);
    await pendingLocal.started();
  }
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

/** The early local sandbox, for the local backend; once. */
export function takeEarlyLocalStart(): EarlyLocalStart | undefined {
  const early = pendingLocal;
  pendingLocal = undefined;
  setImmediate(stopListening);
  return early;
}

/** Ends an early server no backend took (a usage error, another command, another backend). */
export async function discardEarlyStart(): Promise<void> {
  const logger = createStderrLogger({ stream: process.stderr });
  const pid = await takeEarlyStart()?.discard();
  if (pid !== undefined) logger.debug(`the server started early (pid ${pid}) was not used: ended it`);
  if (await takeEarlyLocalStart()?.discard())
    logger.debug('the sandbox started early was not used: closed it');
}
