/**
 * Traces of mcp-sandbox 0.2 are one `{ts, dir, msg}` object a line: a timestamp, the direction
 * (`client->server` or `server->client`) and the message, parsed when it was JSON, else the raw
 * line. They carry no version, no session boundaries, backend, sizes or exit. This module turns
 * such lines into v1 message records so the one summarizer reads both, and says what it read.
 */

export type TraceFormat = 'v1' | '0.2' | '0.2+v1' | 'empty';

export interface UpgradedTrace {
  /** The text with each 0.2 line replaced by a v1 message record; v1 lines untouched. */
  readonly text: string;
  readonly legacyLines: number;
  readonly currentLines: number;
}

const DIRECTIONS = new Set(['client->server', 'server->client']);

export function upgradeLegacyTrace(text: string): UpgradedTrace {
  let legacyLines = 0;
  let currentLines = 0;
  const lines = text.split('\n').map((line, index) => {
    if (!line.trim()) return line;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return line; // damaged or cut short: the reader counts it
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) return line;
    const record = value as Record<string, unknown>;
    if ('v' in record) {
      currentLines++;
      return line;
    }
    if (typeof record.ts !== 'string' || !DIRECTIONS.has(record.dir as string) || !('msg' in record)) {
      return line;
    }
    legacyLines++;
    // 0.2 kept the parsed message, not its bytes: the size is that of the message re-serialized.
    const raw = typeof record.msg === 'string' ? record.msg : JSON.stringify(record.msg);
    return JSON.stringify({
      v: 1,
      ts: record.ts,
      seq: index,
      type: 'message',
      dir: record.dir,
      bytes: Buffer.byteLength(raw),
      message: record.msg,
    });
  });
  return { text: lines.join('\n'), legacyLines, currentLines };
}

export function traceFormat(upgraded: UpgradedTrace): TraceFormat {
  if (upgraded.legacyLines > 0) return upgraded.currentLines > 0 ? '0.2+v1' : '0.2';
  return upgraded.currentLines > 0 ? 'v1' : 'empty';
}

export function describeFormat(format: TraceFormat): string {
  switch (format) {
    case 'v1':
      return 'trace v1';
    case '0.2':
      return 'mcp-sandbox 0.2 trace ({ts, dir, msg} lines: messages only, sizes re-serialized, no sessions or exit)';
    case '0.2+v1':
      return 'mcp-sandbox 0.2 lines followed by trace v1 records';
    case 'empty':
      return 'no records';
  }
}
