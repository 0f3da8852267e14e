import type { EgressStats } from './egress-summary.js';
import { SessionTally } from './session-tally.js';
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

/** Summarizes each session of a trace (a file may hold several: traces append). */
export function summarizeTrace(text: string): TraceSummary {
  const { records, ...read } = readTrace(text);
  const sessions: SessionSummary[] = [];
  let current: SessionTally | undefined;
  for (const record of records) {
    const t = typeof record.t === 'number' ? record.t : Date.parse(record.ts);
    // A record before any session-start opens a session of its own, with what it can tell.
    if (record.type === 'session-start' || !current) {
      if (current) sessions.push(current.finish());
      current = new SessionTally(record, t);
      if (record.type === 'session-start') continue;
    }
    current.add(record, t);
  }
  if (current) sessions.push(current.finish());
  return { ...read, sessions };
}
