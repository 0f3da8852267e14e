import { type EgressStats, EgressTally } from './egress-summary.js';
import { TRACE_VERSION } from './trace.js';

/** One record of a trace, as read back. */
export interface TraceRecord {
  readonly v: number;
  readonly ts: string;
  readonly t?: number;
  readonly seq: number;
  readonly type: string;
  readonly [field: string]: unknown;
}

export interface TraceReadResult {
  readonly records: TraceRecord[];
  /** Records of a newer trace version than this reader knows, skipped. */
  readonly newerVersion: number;
  /** Lines that are not records (damaged), skipped. */
  readonly malformed: number;
  /** The last line was cut short (a trace still being written, or a crash). */
  readonly truncatedLast: boolean;
}

/** Reads JSONL trace text, tolerating a cut last line and records of newer versions. */
export function readTrace(text: string): TraceReadResult {
  const lines = text.split('\n');
  const last = lines.pop() ?? '';
  const records: TraceRecord[] = [];
  let newerVersion = 0;
  let malformed = 0;
  const take = (line: string): boolean => {
    try {
      const record = JSON.parse(line) as TraceRecord;
      if (typeof record !== 'object' || record === null || typeof record.v !== 'number') return false;
      if (record.v > TRACE_VERSION) newerVersion++;
      else records.push(record);
      return true;
    } catch {
      return false;
    }
  };
  for (const line of lines) if (line.trim() && !take(line)) malformed++;
  const truncatedLast = last.trim() !== '' && !take(last);
  return { records, newerVersion, malformed, truncatedLast };
}

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
  /** How it ended, or null when the trace has no session-end (still running, or killed). */
  end: {
    reason: string;
    exitCode: number | null;
    serverCode: number | null;
    serverSignal: string | null;
  } | null;
}

export interface TraceSummary extends Omit<TraceReadResult, 'records'> {
  readonly sessions: SessionSummary[];
}

interface Pending {
  t: number;
  method: string;
  tool: string | null;
}

/** Summarizes each session of a trace (a file may hold several: traces append). */
export function summarizeTrace(text: string): TraceSummary {
  const { records, ...read } = readTrace(text);
  const sessions: SessionSummary[] = [];
  let current: SessionSummary | undefined;
  let pending = new Map<string, Pending>();
  let latencies = new Map<string, number[]>();
  let egress = new EgressTally();
  let setupEgress = new EgressTally();
  let serverStarted = false;
  let firstT = 0;

  const finish = () => {
    if (!current) return;
    current.unanswered = pending.size;
    current.egress = egress.result();
    current.setupEgress = setupEgress.result();
    for (const [tool, values] of latencies) {
      const stats = current.tools[tool];
      if (!stats) continue;
      values.sort((a, b) => a - b);
      stats.p50Ms = percentile(values, 0.5);
      stats.p95Ms = percentile(values, 0.95);
      stats.maxMs = values.length > 0 ? (values[values.length - 1] as number) : null;
    }
    sessions.push(current);
  };

  for (const record of records) {
    const t = typeof record.t === 'number' ? record.t : Date.parse(record.ts);
    if (record.type === 'session-start' || !current) {
      finish();
      current = emptySession(record);
      pending = new Map();
      latencies = new Map();
      egress = new EgressTally();
      setupEgress = new EgressTally();
      serverStarted = false;
      firstT = t;
      if (record.type === 'session-start') continue;
    }
    const session = current;
    session.durationMs = Math.round((t - firstT) * 1000) / 1000;
    if (record.type === 'process-start') serverStarted = true;
    if (record.type.startsWith('sandbox.')) (serverStarted ? egress : setupEgress).add(record);
    switch (record.type) {
      case 'message': {
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
        if (!message || typeof message !== 'object') break;
        const method = typeof message.method === 'string' ? message.method : undefined;
        const id = message.id === undefined ? undefined : JSON.stringify(message.id);
        if (method) {
          session.methods[method] = (session.methods[method] ?? 0) + 1;
          if (toServer) session.protocol ??= protocolOf(method, message.params);
          if (toServer && id !== undefined) {
            const params = message.params as { name?: unknown } | undefined;
            const tool = method === 'tools/call' && typeof params?.name === 'string' ? params.name : null;
            pending.set(id, { t, method, tool });
            if (tool) session.tools[tool] ??= { calls: 0, errors: 0, p50Ms: null, p95Ms: null, maxMs: null };
            if (tool) (session.tools[tool] as ToolStats).calls++;
          }
        } else if (!toServer && id !== undefined) {
          const request = pending.get(id);
          pending.delete(id);
          const failed =
            message.error !== undefined || (message.result as { isError?: unknown })?.isError === true;
          if (message.error !== undefined) session.errors++;
          if (request?.tool) {
            const stats = session.tools[request.tool] as ToolStats;
            if (failed) stats.errors++;
            const list = latencies.get(request.tool) ?? [];
            list.push(Math.round((t - request.t) * 1000) / 1000);
            latencies.set(request.tool, list);
          }
        }
        break;
      }
      case 'synthesized-error': {
        session.synthesizedErrors++;
        session.errors++;
        const id = typeof record.id === 'string' ? normalizeId(record.id) : undefined;
        const request = id === undefined ? undefined : pending.get(id);
        if (id !== undefined) pending.delete(id);
        if (request?.tool && session.tools[request.tool]) (session.tools[request.tool] as ToolStats).errors++;
        break;
      }
      case 'stdout-diverted':
        session.diverted++;
        break;
      case 'stderr':
        session.stderr.lines++;
        session.stderr.bytes += typeof record.text === 'string' ? Buffer.byteLength(record.text) + 1 : 0;
        break;
      case 'policy':
        if (record.action === 'dropped') {
          const reason = String(record.reason);
          session.dropped[reason] = (session.dropped[reason] ?? 0) + 1;
          break;
        }
        session.policy.push({
          action: String(record.action),
          tool: String(record.tool ?? '-'),
          rule: String(record.rule ?? record.reason),
        });
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
  finish();
  return { ...read, sessions };
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
