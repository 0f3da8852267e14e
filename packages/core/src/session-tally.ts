/** One session of a trace, tallied record by record (trace-summary.ts reads the file). */
import { type EgressStats, EgressTally } from './egress-summary.js';
import { type BoundHostTrouble, type SecretStats, SecretTally } from './secret-summary.js';
import type { TraceRecord } from './trace-record.js';

export interface ToolStats {
  calls: number;
  errors: number;
  p50Ms: number | null;
  p95Ms: number | null;
  maxMs: number | null;
}

export interface SessionSummary {
  sessionId: string | null;
  backend: string | null;
  isolation: string | null;
  command: readonly string[];
  startedAt: string | null;
  durationMs: number | null;
  messages: { clientToServer: number; serverToClient: number };
  bytes: { clientToServer: number; serverToClient: number };
  /**
   * The protocol the client asked for: `legacy` (an `initialize`, 2025-11-25 and before) or
   * `modern` (2026-07-28: `server/discover`, the version in each request's `_meta`); null when
   * the trace holds neither.
   */
  protocol: { era: 'legacy' | 'modern'; version: string | null } | null;
  /** Requests and notifications by method, both directions. */
  methods: Record<string, number>;
  tools: Record<string, ToolStats>;
  /** Requests the client sent that got no response in the trace. */
  unanswered: number;
  errors: number;
  synthesizedErrors: number;
  diverted: number;
  stderr: { lines: number; bytes: number };
  policy: Array<{ action: string; tool: string; rule: string }>;
  /** Server lines a tool policy dropped because clients could read them two ways, by reason. */
  dropped: Record<string, number>;
  pinDrift: Array<{ tool: string; change: string }>;
  /** The server's egress per host (from the backend's `sandbox.proxy`, `sandbox.egress-*` records). */
  egress: Record<string, EgressStats>;
  /** Egress before the server started: the `npx` install step, setup steps. */
  setupEgress: Record<string, EgressStats>;
  /** Withheld host variables the server asked for (`env-hint` records), each once. */
  envHints: string[];
  /** Each `--secret` by name: where its real value went, where its stand-in was misused. */
  secrets: Record<string, SecretStats>;
  /** Bound hosts whose connections or requests were cut off before a value went out. */
  boundHosts: Record<string, BoundHostTrouble>;
  /** How it ended, or null when the trace has no session-end (still running, or killed). */
  end: {
    reason: string;
    exitCode: number | null;
    serverCode: number | null;
    serverSignal: string | null;
  } | null;
}

interface Pending {
  readonly t: number;
  readonly method: string;
  readonly tool: string | null;
}

export class SessionTally {
  readonly #session: SessionSummary;
  readonly #firstT: number;
  /** Client requests not yet answered, by the JSON text of their id. */
  readonly #pending = new Map<string, Pending>();
  /** Each tool's call latencies, ms. */
  readonly #latencies = new Map<string, number[]>();
  readonly #egress = new EgressTally();
  /** Egress before the server started: the install step, setup steps. */
  readonly #setupEgress = new EgressTally();
  readonly #secrets = new SecretTally();
  #serverStarted = false;

  /** `start` opens the session: its session-start record, or the first record of a trace without one. */
  constructor(start: TraceRecord, t: number) {
    this.#session = emptySession(start);
    this.#firstT = t;
  }

  add(record: TraceRecord, t: number): void {
    const session = this.#session;
    session.durationMs = Math.round((t - this.#firstT) * 1000) / 1000;
    if (record.type === 'process-start') this.#serverStarted = true;
    if (record.type.startsWith('sandbox.'))
      (this.#serverStarted ? this.#egress : this.#setupEgress).add(record);
    if (record.type.startsWith('sandbox.secret-')) this.#secrets.add(record);
    switch (record.type) {
      case 'message':
        this.#message(record, t);
        break;
      case 'synthesized-error':
        this.#synthesizedError(record);
        break;
      case 'stdout-diverted':
        session.diverted++;
        break;
      case 'stderr':
        session.stderr.lines++;
        session.stderr.bytes += typeof record.text === 'string' ? Buffer.byteLength(record.text) + 1 : 0;
        break;
      case 'policy':
        this.#policy(record);
        break;
      case 'env-hint':
        // Read back from a file: only a variable name is kept, as the hint was built from one.
        if (
          typeof record.name === 'string' &&
          ENV_NAME.test(record.name) &&
          !session.envHints.includes(record.name)
        )
          session.envHints.push(record.name);
        break;
      case 'pin-drift':
        session.pinDrift.push({ tool: String(record.tool), change: String(record.change) });
        break;
      case 'sandbox-created':
        session.isolation ??= typeof record.isolation === 'string' ? record.isolation : null;
        break;
      case 'session-end':
        session.end = {
          reason: String(record.reason),
          exitCode: typeof record.exitCode === 'number' ? record.exitCode : null,
          serverCode: typeof record.serverCode === 'number' ? record.serverCode : null,
          serverSignal: typeof record.serverSignal === 'string' ? record.serverSignal : null,
        };
        break;
    }
  }

  /** The summary, with what is counted only at the end: unanswered requests, egress, latencies. */
  finish(): SessionSummary {
    const session = this.#session;
    session.unanswered = this.#pending.size;
    session.egress = this.#egress.result();
    session.setupEgress = this.#setupEgress.result();
    const secrets = this.#secrets.result();
    session.secrets = secrets.secrets;
    session.boundHosts = secrets.boundHosts;
    for (const [tool, values] of this.#latencies) {
      const stats = session.tools[tool];
      if (!stats) continue;
      values.sort((a, b) => a - b);
      stats.p50Ms = percentile(values, 0.5);
      stats.p95Ms = percentile(values, 0.95);
      stats.maxMs = values.length > 0 ? (values[values.length - 1] as number) : null;
    }
    return session;
  }

  #message(record: TraceRecord, t: number): void {
    const session = this.#session;
    const toServer = record.dir === 'client->server';
    const bytes = typeof record.bytes === 'number' ? record.bytes : 0;
    if (toServer) {
      session.messages.clientToServer++;
      session.bytes.clientToServer += bytes;
    } else {
      session.messages.serverToClient++;
      session.bytes.serverToClient += bytes;
    }
    const message = record.message as Record<string, unknown> | undefined;
    if (!message || typeof message !== 'object') return;
    const method = typeof message.method === 'string' ? message.method : undefined;
    const id = message.id === undefined ? undefined : JSON.stringify(message.id);
    if (method) {
      session.methods[method] = (session.methods[method] ?? 0) + 1;
      if (toServer) session.protocol ??= protocolOf(method, message.params);
      if (toServer && id !== undefined) this.#request(id, method, message.params, t);
    } else if (!toServer && id !== undefined) {
      this.#response(id, message, t);
    }
  }

  #request(id: string, method: string, params: unknown, t: number): void {
    const name = (params as { name?: unknown } | undefined)?.name;
    const tool = method === 'tools/call' && typeof name === 'string' ? name : null;
    this.#pending.set(id, { t, method, tool });
    if (!tool) return;
    const tools = this.#session.tools;
    tools[tool] ??= { calls: 0, errors: 0, p50Ms: null, p95Ms: null, maxMs: null };
    (tools[tool] as ToolStats).calls++;
  }

  #response(id: string, message: Record<string, unknown>, t: number): void {
    const session = this.#session;
    const request = this.#pending.get(id);
    this.#pending.delete(id);
    const failed = message.error !== undefined || (message.result as { isError?: unknown })?.isError === true;
    if (message.error !== undefined) session.errors++;
    if (!request?.tool) return;
    const stats = session.tools[request.tool] as ToolStats;
    if (failed) stats.errors++;
    const list = this.#latencies.get(request.tool) ?? [];
    list.push(Math.round((t - request.t) * 1000) / 1000);
    this.#latencies.set(request.tool, list);
  }

  #synthesizedError(record: TraceRecord): void {
    const session = this.#session;
    session.synthesizedErrors++;
    session.errors++;
    const id = typeof record.id === 'string' ? normalizeId(record.id) : undefined;
    const request = id === undefined ? undefined : this.#pending.get(id);
    if (id !== undefined) this.#pending.delete(id);
    if (request?.tool && session.tools[request.tool]) (session.tools[request.tool] as ToolStats).errors++;
  }

  #policy(record: TraceRecord): void {
    const session = this.#session;
    if (record.action === 'dropped') {
      const reason = String(record.reason);
      session.dropped[reason] = (session.dropped[reason] ?? 0) + 1;
      return;
    }
    session.policy.push({
      action: String(record.action),
      tool: String(record.tool ?? '-'),
      rule: String(record.rule ?? record.reason),
    });
  }
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The id of a synthesized error is stored as its JSON text; messages store it parsed. */
function normalizeId(idText: string): string {
  try {
    return JSON.stringify(JSON.parse(idText));
  } catch {
    return idText;
  }
}

function emptySession(start: TraceRecord): SessionSummary {
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    sessionId: str(start.sessionId),
    backend: str(start.backend),
    isolation: str(start.isolation),
    command: Array.isArray(start.command) ? (start.command as string[]) : [],
    startedAt: str(start.ts),
    durationMs: null,
    messages: { clientToServer: 0, serverToClient: 0 },
    bytes: { clientToServer: 0, serverToClient: 0 },
    protocol: null,
    methods: {},
    tools: {},
    unanswered: 0,
    errors: 0,
    synthesizedErrors: 0,
    diverted: 0,
    stderr: { lines: 0, bytes: 0 },
    policy: [],
    dropped: {},
    pinDrift: [],
    egress: {},
    setupEgress: {},
    envHints: [],
    secrets: {},
    boundHosts: {},
    end: null,
  };
}

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const index = Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1);
  return sorted[Math.max(0, index)] as number;
}

/** The era and version a client request names: `initialize` params, or a 2026-07-28 `_meta`. */
function protocolOf(method: string, params: unknown): SessionSummary['protocol'] {
  if (typeof params !== 'object' || params === null) return null;
  const p = params as { protocolVersion?: unknown; _meta?: Record<string, unknown> };
  if (method === 'initialize')
    return { era: 'legacy', version: typeof p.protocolVersion === 'string' ? p.protocolVersion : null };
  const claimed = p._meta?.['io.modelcontextprotocol/protocolVersion'];
  if (typeof claimed === 'string') return { era: 'modern', version: claimed };
  return method === 'server/discover' ? { era: 'modern', version: null } : null;
}
