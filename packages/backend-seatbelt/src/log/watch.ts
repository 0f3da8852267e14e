import { type ChildProcess, spawn } from 'node:child_process';
import type { Logger, SandboxEvent } from '@mcpsandbox/core';
import {
  type Denial,
  denialLine,
  grantFor,
  logStreamArgs,
  MAX_LOG_LINE,
  parseDenialLine,
} from './denials.js';

/** Distinct denials reported per session; the rest are counted, not printed. */
export const MAX_REPORTED = 100;

/**
 * Reports one session's denials: one stderr line each (deduplicated, at most {@link MAX_REPORTED})
 * and a `seatbelt-denial` trace event the trace's `--suggest` can collect. Fed lines of
 * `log stream --style ndjson`; bounded whatever the stream holds.
 */
export class SeatbeltDenials {
  readonly #tag: string;
  readonly #logger: Logger;
  readonly #onEvent: ((event: SandboxEvent) => void) | undefined;
  readonly #seen = new Set<string>();
  #partial = '';
  #skipping = false;
  #dropped = 0;
  readonly denials: Denial[] = [];

  constructor(tag: string, logger: Logger, onEvent?: (event: SandboxEvent) => void) {
    this.#tag = tag;
    this.#logger = logger;
    this.#onEvent = onEvent;
  }

  /** A chunk of the stream: whole lines are parsed, an over-long one is skipped to its end. */
  push(chunk: string): void {
    const parts = (this.#partial + chunk).split('\n');
    this.#partial = parts.pop() ?? '';
    for (const line of parts) {
      if (this.#skipping) this.#skipping = false;
      else this.#line(line);
    }
    if (this.#partial.length > MAX_LOG_LINE) {
      this.#partial = '';
      this.#skipping = true;
    }
  }

  #line(line: string): void {
    const denial = parseDenialLine(line, this.#tag);
    if (!denial) return;
    const key = `${denial.op} ${denial.target}`;
    if (this.#seen.has(key)) return;
    if (this.#seen.size >= MAX_REPORTED) {
      this.#dropped++;
      return;
    }
    this.#seen.add(key);
    this.denials.push(denial);
    this.#logger.warn(denialLine(denial));
    this.#onEvent?.({
      type: 'seatbelt-denial',
      op: denial.op,
      target: denial.target,
      process: denial.process,
      hint: grantFor(denial),
    });
  }

  /** How many distinct denials were past the cap. */
  get dropped(): number {
    return this.#dropped;
  }
}

/** Starts `log stream` for a session's tag (macOS). Stopped with the session. */
export function watchDenials(reporter: SeatbeltDenials, tag: string): ChildProcess | undefined {
  try {
    const child = spawn('/usr/bin/log', logStreamArgs(tag), { stdio: ['ignore', 'pipe', 'ignore'] });
    child.on('error', () => {});
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => reporter.push(chunk));
    child.unref();
    return child;
  } catch {
    return undefined;
  }
}
