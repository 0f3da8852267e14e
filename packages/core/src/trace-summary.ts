import { type SessionSummary, SessionTally } from './session-tally.js';
import { TRACE_VERSION } from './trace.js';
import type { TraceRecord } from './trace-record.js';

export type { SessionSummary, ToolStats } from './session-tally.js';
export type { TraceRecord } from './trace-record.js';

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
