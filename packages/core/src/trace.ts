import { closeSync, openSync, writeSync } from 'node:fs';
import { UsageError } from './errors.js';
import { createRedactor, type Redactor, type SecretSet } from './secrets.js';

export const TRACE_VERSION = 1;

export type Direction = 'client->server' | 'server->client';

/** Where trace records go. `null` tracing costs nothing on the hot path. */
export interface TraceSink {
  /** A lifecycle record: `{v, ts, seq, type, ...fields}`. */
  event(type: string, fields?: Record<string, unknown>): void;
  /** A protocol message; `text` is the line without its newline, `json` says whether it parsed. */
  message(direction: Direction, text: string, bytes: number, json: boolean): void;
  /** Writes everything buffered, synchronously. Safe to call on any exit path. */
  flush(): void;
  close(): void;
}

export interface TraceFileOptions {
  /** Values redacted from every record; a shared set keeps redacting what is added to it later. */
  readonly secrets?: readonly string[] | SecretSet;
  /** Buffered bytes that trigger a write (default 64 KiB); a timer flushes the rest soon after. */
  readonly flushBytes?: number;
}

/**
 * Opens an append-only JSONL trace. Message bodies are embedded as the exact text the peer sent
 * (after redaction), so ids past 2^53 and key order survive.
 */
export function openTraceFile(path: string, options: TraceFileOptions = {}): TraceSink {
  let fd: number;
  try {
    fd = openSync(path, 'a');
  } catch (error) {
    throw new UsageError(`--trace ${path}: cannot open for appending (${(error as Error).message})`, {
      cause: error,
    });
  }
  return new JsonlTrace(
    (text) => writeSync(fd, text),
    () => closeSync(fd),
    options,
  );
}

export class JsonlTrace implements TraceSink {
  readonly #write: (text: string) => void;
  readonly #closeTarget: () => void;
  readonly #redact: Redactor;
  readonly #flushBytes: number;
  #seq = 0;
  readonly #origin = performance.now();
  #buffer: string[] = [];
  #buffered = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(write: (text: string) => void, close: () => void, options: TraceFileOptions = {}) {
    this.#write = write;
    this.#closeTarget = close;
    this.#redact = createRedactor(options.secrets ?? []);
    this.#flushBytes = options.flushBytes ?? 64 * 1024;
  }

  event(type: string, fields: Record<string, unknown> = {}): void {
    const head = this.#head(type);
    const body = JSON.stringify(fields);
    this.#push(`${head}${body.length > 2 ? `,${this.#redact(body.slice(1, -1))}` : ''}}\n`);
  }

  message(direction: Direction, text: string, bytes: number, json: boolean): void {
    const head = `${this.#head('message')},"dir":"${direction}","bytes":${bytes}`;
    const redacted = this.#redact(text);
    // Redaction inside a JSON number or literal would break the record: fall back to a string.
    const embed = json && (redacted === text || isJson(redacted));
    this.#push(embed ? `${head},"message":${redacted}}\n` : `${head},"raw":${JSON.stringify(redacted)}}\n`);
  }

  flush(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#buffered === 0 || this.#closed) return;
    const text = this.#buffer.join('');
    this.#buffer = [];
    this.#buffered = 0;
    this.#write(text);
  }

  close(): void {
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
    this.#closeTarget();
  }

  #head(type: string): string {
    // `t`: milliseconds since the trace was opened, to the microsecond, for latencies finer than `ts`.
    const t = Math.round((performance.now() - this.#origin) * 1000) / 1000;
    return `{"v":${TRACE_VERSION},"ts":"${new Date().toISOString()}","t":${t},"seq":${this.#seq++},"type":${JSON.stringify(type)}`;
  }

  #push(record: string): void {
    if (this.#closed) return;
    this.#buffer.push(record);
    this.#buffered += record.length;
    if (this.#buffered >= this.#flushBytes) this.flush();
    else if (!this.#timer) {
      this.#timer = setTimeout(() => this.flush(), 50);
      this.#timer.unref();
    }
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
