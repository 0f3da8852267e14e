import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import { resolve } from 'node:path';
import {
  createStderrLogger,
  DEFAULT_MAX_LINE_BYTES,
  type Logger,
  openTraceFile,
  type StopSignal,
  type TraceSink,
  UsageError,
} from '@mcpsandbox/core';
import type { Command } from 'commander';
import type { CliIo, CliOptions } from '../options.js';
import { parseSize } from '../parse.js';
import { reportError } from '../report.js';
import { SafetyNet } from '../safety-net.js';
import { MCP_PATH } from '../serve/endpoint.js';
import { loadToken } from '../serve/guard.js';
import { DEFAULT_REPLAY_LIMITS } from '../serve/replay.js';
import { SessionTable } from '../serve/sessions.js';
import { SharedServer } from '../serve/shared.js';
import { StatelessPool } from '../serve/stateless.js';
import { type Message, type StartLink, Upstream } from '../serve/upstream.js';
import { addRunOptions, announce, planRun, type RunFlags } from './run.js';

interface ServeFlags extends RunFlags {
  port: string;
  tokenFile?: string;
  maxSessions: string;
  shared?: boolean;
}

const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
export const DEFAULT_SERVE_PORT = 8931;
/** After a stop signal, how long the sandboxes may take to close before the command ends anyway. */
const CLOSE_DEADLINE_MS = 15_000;

export function registerServeCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  const serve = program
    .command('serve')
    .description(
      'Expose a sandboxed stdio MCP server over Streamable HTTP on 127.0.0.1, behind a bearer token.',
    )
    .argument('<command...>', 'the MCP server command and its arguments (put it after --)')
    .passThroughOptions();
  addRunOptions(serve, options)
    .option('--port <n>', 'TCP port on 127.0.0.1 (0 picks a free one)', String(DEFAULT_SERVE_PORT))
    .option(
      '--token-file <file>',
      'read the bearer token from <file> (else one is generated and printed once)',
    )
    .option('--max-sessions <n>', 'most sessions open at once (each its own sandbox, unless --shared)', '16')
    .option(
      '--shared',
      'one sandbox for every session: each client sees what the others left in the server (see below)',
    )
    .option('--trace <file>', 'append every message and lifecycle event of every session to <file> as JSONL')
    .option(
      '--max-message-size <size>',
      `largest JSON-RPC message either way, and largest request body (default ${DEFAULT_MAX_LINE_BYTES / 2 ** 20}MiB)`,
    )
    .addHelpText(
      'after',
      `
Each client session (protocol 2025-11-25 and earlier) gets a sandbox of its own, so one client
cannot see another's server state; --ttl, --trace, the tool policy and --require-isolation apply
to each. Stateless requests (2026-07-28) share one long-lived sandbox. SSE events carry ids: a
client that reconnects with Last-Event-ID gets what it missed (the last 1000 events or 8MiB of a
session; further behind, a 409 error). The endpoint is http://127.0.0.1:<port>${MCP_PATH}.

--shared runs ONE sandbox for all sessions. Its risks: whatever one client stores in the server
(files, memory, a login) every other client can read or change, and the server's notifications
reach every session. The server sees one client: the first initialize is forwarded and later
sessions are answered from its result (the one place serve answers for the server); ids and
progress tokens are rewritten so sessions never collide; sampling, elicitation and roots requests
go to the session whose request is in progress, else the newest with its GET stream open.

Examples:
  mcp-sandbox serve --port 8931 --token-file ~/.config/mcp-token -- npx -y @modelcontextprotocol/server-everything
  claude mcp add --transport http everything http://127.0.0.1:8931${MCP_PATH} --header "Authorization: Bearer $(cat ~/.config/mcp-token)"`,
    )
    .action(async (command: string[], flags: ServeFlags, cmd: Command) => {
      setExitCode(await serveAction(command, flags, options, cmd.getOptionValueSource('backend') === 'cli'));
    });
}

function parseCount(text: string, flag: string, min: number, max: number): number {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= min && n <= max))
    throw new UsageError(`${flag} ${text}: give a whole number from ${min} to ${max}`);
  return n;
}

async function serveAction(
  command: string[],
  flags: ServeFlags,
  options: CliOptions,
  backendGiven: boolean,
): Promise<number> {
  const { io } = options;
  const logger = createStderrLogger({ stream: io.stderr, quiet: flags.quiet ?? false });
  const net = new SafetyNet(io.faults, logger);
  let trace: TraceSink | undefined;
  try {
    const port = parseCount(flags.port, '--port', 0, 65535);
    const maxSessions = parseCount(flags.maxSessions, '--max-sessions', 1, 10_000);
    const maxBodyBytes = flags.maxMessageSize
      ? parseSize(flags.maxMessageSize, '--max-message-size')
      : DEFAULT_MAX_LINE_BYTES;
    const { token, generated } = loadToken(flags.tokenFile ? resolve(io.cwd, flags.tokenFile) : undefined);
    const plan = await net.guard(planRun(flags, options, logger, backendGiven));
    if (flags.trace) trace = openTraceFile(resolve(io.cwd, flags.trace), { secrets: plan.allow.secrets });
    announce(plan, logger);
    const secrets = [...plan.allow.secrets, token.value];
    const start = (onMessage: (message: Message) => void) =>
      new Upstream(
        {
          plan,
          command,
          logger,
          stderr: io.stderr,
          sessionId: randomUUID(),
          secrets,
          ...(trace ? { trace } : {}),
        },
        onMessage,
      );
    const sessions = new SessionTable(maxSessions, DEFAULT_REPLAY_LIMITS, (text) => logger.warn(text));
    const stateless = new StatelessPool(start);
    const shared = flags.shared ? new SharedServer(start) : undefined;
    const startSession: StartLink = shared ? (onMessage, peer) => shared.link(onMessage, peer) : start;
    if (shared) logger.warn("--shared: one sandbox serves every session; clients can see each other's data");
    // Node's HTTP server loads here, not in every `run`.
    const { createListener } = await import('../serve/listener.js');
    const server = createListener({ token, maxBodyBytes, sessions, stateless, startSession, logger });
    server.listen(port, '127.0.0.1');
    await Promise.race([
      once(server, 'listening'),
      once(server, 'error').then(([e]) => Promise.reject(e)),
    ]).catch((error: NodeJS.ErrnoException) => {
      throw new UsageError(`--port ${port}: cannot listen on 127.0.0.1 (${error.code ?? error.message})`);
    });
    const bound = (server.address() as { port: number }).port;
    if (generated) io.stderr.write(`mcp-sandbox: bearer token (shown once): ${token.value}\n`);
    logger.info(`listening on http://127.0.0.1:${bound}${MCP_PATH}`);
    await stopSignal(io);
    logger.info('stopping: closing every session');
    await closeAll(server, sessions, [stateless, ...(shared ? [shared] : [])], logger);
    return 0;
  } catch (error) {
    return reportError(error, logger);
  } finally {
    trace?.close();
    net.dispose();
  }
}

function stopSignal(io: CliIo): Promise<void> {
  return new Promise((done) => {
    const listener = () => {
      for (const signal of STOP_SIGNALS) io.signals?.off(signal, listener);
      done();
    };
    for (const signal of STOP_SIGNALS) io.signals?.on(signal, listener);
  });
}

interface Pool {
  readonly upstream: Upstream | undefined;
  close(): void;
}

async function closeAll(server: Server, sessions: SessionTable, pools: Pool[], logger: Logger) {
  server.close();
  const upstreams: Array<{ stop(): void; done: Promise<unknown> }> = [
    ...sessions.all().map((s) => s.link),
    ...pools.flatMap((p) => (p.upstream ? [p.upstream] : [])),
  ];
  for (const session of sessions.all()) session.close();
  for (const pool of pools) pool.close();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((done) => {
    timer = setTimeout(() => {
      logger.warn('some sandboxes did not close in time; stopping them');
      for (const upstream of upstreams) upstream.stop();
      done();
    }, CLOSE_DEADLINE_MS);
  });
  await Promise.race([Promise.all(upstreams.map((u) => u.done)), deadline]);
  clearTimeout(timer);
  await Promise.all(upstreams.map((u) => u.done));
  server.closeAllConnections();
}
