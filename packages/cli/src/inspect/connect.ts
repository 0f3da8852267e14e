import { PassThrough, type Writable } from 'node:stream';
import { type BridgeResult, type BridgeSession, type Logger, startBridge } from '@mcpsandbox/core';
import type { Client } from '@modelcontextprotocol/client';
import type { RunPlan } from '../commands/run.js';
import { mountHintsFor } from '../mount-hints.js';
import type { SafetyNet } from '../safety-net.js';
import { sandboxOutput } from '../sandbox-output.js';
import { LastLines } from './last-lines.js';
import { PipeTransport } from './pipe-transport.js';

/** The 2026-07-28 revision, the first without `initialize`. */
export const MODERN_REVISION = '2026-07-28';

/** How to open: probe with `server/discover` and fall back, or one era only (for a retry). */
export type Negotiation = 'auto' | 'legacy' | 'modern';

/** The longest the `server/discover` probe waits before trying `initialize` on the same pipe. */
const PROBE_MS = 5000;

/** Why `inspect` got no report: the program ended, stayed silent, or answered something else. */
export class InspectFailure extends Error {
  readonly kind: 'ended' | 'timeout' | 'protocol' | 'listing';
  constructor(kind: InspectFailure['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

export interface InspectContext {
  readonly plan: RunPlan;
  readonly command: string[];
  readonly stderr: Writable;
  /** The user's home: never offered as a mount. */
  readonly home: string | undefined;
  readonly logger: Logger;
  readonly net: SafetyNet;
  readonly version: string;
  readonly timeoutMs: number;
  readonly timeoutText: string;
}

/** One session of the bridge with the client on its other end. */
export interface Attempt {
  readonly client: Client;
  readonly transport: PipeTransport;
  readonly ended: Promise<BridgeResult>;
  /** Set when the client could not connect. */
  readonly failure?: InspectFailure;
  /** Set when a fresh session in another era may succeed where this one did not. */
  readonly retry?: Negotiation;
  /** The last lines from inside the sandbox (the server's stderr), escaped and prefixed. */
  readonly lastLines: () => string[];
}

/**
 * Starts the bridge as `run` would, with the client on two in-memory pipes, and connects once the
 * server runs: `--timeout` is the server's, counted after the sandbox's setup and any install.
 */
export async function openAttempt(ctx: InspectContext, negotiation: Negotiation): Promise<Attempt> {
  const { plan } = ctx;
  const toServer = new PassThrough();
  const toClient = new PassThrough();
  const last = new LastLines();
  const lastLines = () => last.lines();
  const session: BridgeSession = startBridge({
    backend: plan.backend,
    command: ctx.command,
    setup: plan.setup,
    spec: plan.spec,
    secrets: plan.secrets,
    withheldEnv: plan.allow.withheld,
    secretHints: plan.substitutesSecrets,
    mountHints: mountHintsFor(ctx.command, plan.spec.mounts ?? [], plan.backend.isolation, ctx.home),
    input: toServer,
    output: toClient,
    errorOutput: sandboxOutput(last.tee(ctx.stderr)),
    logger: ctx.logger,
    // Nothing is owed once the report is in; when it is not, a silent program need not be waited for.
    timing: { ...plan.timing, exitGraceMs: 200, drainMs: 1000 },
    ...(plan.policy ? { policy: plan.policy } : {}),
  });
  ctx.net.attach(session);
  const transport = new PipeTransport(toServer, toClient);
  let serverGone = false;
  const ended = ctx.net.result(session).then((result) => {
    serverGone = true;
    transport.ended();
    return result;
  });
  // The client is loaded only here: `run`, the hot path, never pays for it.
  const { Client } = await import('@modelcontextprotocol/client');
  const client = new Client(
    { name: 'mcp-sandbox-inspect', version: ctx.version },
    { capabilities: {}, versionNegotiation: versionNegotiation(negotiation, ctx.timeoutMs) },
  );
  const endedEarly = () =>
    new InspectFailure(
      'ended',
      `it ended before answering ${negotiation === 'auto' ? 'server/discover or initialize' : opening(negotiation)}`,
    );
  if (!(await session.started)) return { client, transport, ended, lastLines, failure: endedEarly() };
  const limit = startTimer(ctx.timeoutMs);
  try {
    await Promise.race([
      client.connect(transport, { timeout: ctx.timeoutMs }),
      ended.then(() => Promise.reject(endedEarly())),
      limit.expired.then(() =>
        Promise.reject(
          new InspectFailure(
            'timeout',
            `no answer to ${opening(negotiation)} within ${ctx.timeoutText} (--timeout)`,
          ),
        ),
      ),
    ]);
    return { client, transport, ended, lastLines };
  } catch (error) {
    const retry = retryFor(negotiation, error, serverGone);
    // The client rejects with "Not connected" when the session ends first: say that it ended.
    const failure =
      error instanceof InspectFailure
        ? error
        : serverGone
          ? endedEarly()
          : new InspectFailure('protocol', errorText(error));
    return { client, transport, ended, lastLines, failure, ...(retry ? { retry } : {}) };
  } finally {
    limit.cancel();
  }
}

/** Whether a failed first attempt's result leaves a fresh session worth starting. */
export function worthRetrying(result: BridgeResult): boolean {
  // A program that exited on the probe is a 2025 server whose SDK ends on an unknown request; a
  // command that was not found, a sandbox that failed or a TTL gives the same answer twice.
  // The client's close may race the exit and be what the bridge saw first: an exit with a code
  // (no signal) is the program's own either way.
  const status = result.serverStatus;
  const exited =
    result.reason === 'server-exit' || (result.reason === 'client-eof' && status?.signal === null);
  return exited && status?.code !== 126 && status?.code !== 127;
}

function versionNegotiation(negotiation: Negotiation, timeoutMs: number) {
  if (negotiation === 'legacy') return { mode: 'legacy' as const };
  if (negotiation === 'modern') return { mode: { pin: MODERN_REVISION }, probe: { timeoutMs } };
  // A 2025 server may ignore a request before `initialize`: after a short wait, try `initialize`.
  return { mode: 'auto' as const, probe: { timeoutMs: Math.min(PROBE_MS, Math.ceil(timeoutMs / 2)) } };
}

/** What the client waits for once the probe's short wait is over. */
function opening(negotiation: Negotiation): string {
  return negotiation === 'modern' ? 'server/discover' : 'initialize';
}

/**
 * A server that closed during the probe gets `initialize` in a fresh session; one that refused
 * `initialize` with -32022, naming 2026-07-28, answered the probe too late and gets it again.
 */
function retryFor(negotiation: Negotiation, error: unknown, serverGone: boolean): Negotiation | undefined {
  if (negotiation !== 'auto') return undefined;
  // Whichever saw the end first, the client's probe or the bridge: the server ended unconnected.
  if (serverGone) return 'legacy';
  const { code, data } = (typeof error === 'object' && error !== null ? error : {}) as {
    code?: unknown;
    data?: unknown;
  };
  const supported = (data as { supported?: unknown } | undefined)?.supported;
  if (code === -32022 && Array.isArray(supported) && supported.includes(MODERN_REVISION)) return 'modern';
  return undefined;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function startTimer(ms: number): { expired: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  return { expired, cancel: () => clearTimeout(timer) };
}
