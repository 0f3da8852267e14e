import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import { resolve } from 'node:path';
import {
  createStderrLogger,
  DEFAULT_MAX_LINE_BYTES,
  type Logger,
  openTraceFile,
  redactLogger,
  type StopSignal,
  type TraceSink,
  UsageError,
} from '@mcpsandbox/core';
import type { CliIo, CliOptions } from '../options.js';
import { parseSize } from '../parse.js';
import { reportError } from '../report.js';
import { SafetyNet } from '../safety-net.js';
import { MCP_PATH } from '../serve/endpoint.js';
import { loadToken } from '../serve/guard.js';
import { createListener } from '../serve/listener.js';
import { DEFAULT_REPLAY_LIMITS } from '../serve/replay.js';
import { SessionTable } from '../serve/sessions.js';
import { SharedServer } from '../serve/shared.js';
import { StatelessPool } from '../serve/stateless.js';
import { type Message, type StartLink, Upstream } from '../serve/upstream.js';
import { announce, planRun, type RunFlags } from './run.js';

export interface ServeFlags extends RunFlags {
  port: string;
  tokenFile?: string;
  maxSessions: string;
  maxConnections: string;
  shared?: boolean;
}

const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** After a stop signal, how long the sandboxes may take to close before the command ends anyway. */
const CLOSE_DEADLINE_MS = 15_000;

function parseCount(text: string, flag: string, min: number, max: number): number {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= min && n <= max))
    throw new UsageError(`${flag} ${text}: give a whole number from ${min} to ${max}`);
  return n;
}

export async function serveAction(
  command: string[],
  flags: ServeFlags,
  options: CliOptions,
  backendGiven: boolean,
): Promise<number> {
  const { io } = options;
  let logger = createStderrLogger({ stream: io.stderr, quiet: flags.quiet ?? false });
  const net = new SafetyNet(io.faults, logger);
  let trace: TraceSink | undefined;
  try {
    const port = parseCount(flags.port, '--port', 0, 65535);
    const maxSessions = parseCount(flags.maxSessions, '--max-sessions', 1, 10_000);
    const maxConnections = parseCount(flags.maxConnections, '--max-connections', 1, 10_000);
    const maxBodyBytes = flags.maxMessageSize
      ? parseSize(flags.maxMessageSize, '--max-message-size')
      : DEFAULT_MAX_LINE_BYTES;
    const { token, generated } = loadToken(flags.tokenFile ? resolve(io.cwd, flags.tokenFile) : undefined);
    const plan = await net.guard(planRun(flags, options, logger, backendGiven));
    // The bearer token is a secret like the --env values: a client may send it inside a message.
    plan.secrets.add(token.value);
    // From here on every message may quote a client or a server (an error quoting a body).
    logger = redactLogger(logger, plan.secrets.redact);
    if (flags.trace) trace = openTraceFile(resolve(io.cwd, flags.trace), { secrets: plan.secrets });
    announce(plan, logger);
    const secrets = plan.secrets.values();
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
    const shared = flags.shared ? new SharedServer(start, (text) => logger.warn(text)) : undefined;
    const startSession: StartLink = shared ? (onMessage) => shared.link(onMessage) : start;
    if (shared) logger.warn("--shared: one sandbox serves every session; clients can see each other's data");
    const server = createListener({
      token,
      maxBodyBytes,
      maxConnections,
      sessions,
      stateless,
      startSession,
      logger,
    });
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
