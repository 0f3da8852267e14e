import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { HttpRefusal } from './guard.js';
import type { Message } from './upstream.js';

/** How much of a session's SSE traffic is kept for a client that reconnects with Last-Event-ID. */
export interface ReplayLimits {
  readonly maxEvents: number;
  readonly maxBytes: number;
}

export const DEFAULT_REPLAY_LIMITS: ReplayLimits = { maxEvents: 1000, maxBytes: 8 * 2 ** 20 };

/** An event id: the stream's 96 random bits, a dot, the event's number on that stream. */
const EVENT_ID = /^([A-Za-z0-9_-]{16})\.(\d{1,15})$/;

interface Recorded {
  readonly stream: EventStream;
  readonly seq: number;
  readonly text: string;
  delivered: boolean;
}

/**
 * One session's record of what it sent, bounded in events and bytes: the oldest go first. A
 * stream whose events were dropped before the client read them is marked, so that a resume from
 * before the drop is refused with a clear error instead of silently skipping messages.
 */
export class ReplayLog {
  readonly limits: ReplayLimits;
  readonly #events: Recorded[] = [];
  readonly #streams = new Map<string, EventStream>();
  #bytes = 0;
  #dropped = 0;
  readonly #warn: (text: string) => void;

  constructor(limits: ReplayLimits, warn: (text: string) => void) {
    this.limits = limits;
    this.#warn = warn;
  }

  open(carrier?: SseStream): EventStream {
    const stream = new EventStream(randomBytes(12).toString('base64url'), this, carrier);
    this.#streams.set(stream.id, stream);
    return stream;
  }

  /** The stream an event id names, only among this session's streams; else 404. */
  find(eventId: string): { stream: EventStream; seq: number } {
    const match = EVENT_ID.exec(eventId);
    const stream = match ? this.#streams.get(match[1] as string) : undefined;
    if (!match || !stream) {
      throw new HttpRefusal(404, 'Not Found: this Last-Event-ID names no stream of this session');
    }
    return { stream, seq: Number(match[2]) };
  }

  record(stream: EventStream, seq: number, text: string, delivered: boolean): void {
    this.#events.push({ stream, seq, text, delivered });
    this.#bytes += text.length;
    while (
      this.#events.length > 0 &&
      (this.#events.length > this.limits.maxEvents || this.#bytes > this.limits.maxBytes)
    ) {
      const gone = this.#events.shift() as Recorded;
      this.#bytes -= gone.text.length;
      gone.stream.evictedThrough = gone.seq;
      if (!gone.delivered) this.#dropped++;
      if (gone.stream.finished && !this.#events.some((e) => e.stream === gone.stream)) {
        this.#streams.delete(gone.stream.id);
      }
    }
    if (this.#dropped > 0 && (this.#dropped === 1 || this.#dropped % 1000 === 0)) {
      this.#warn(`a client is not reading its stream: ${this.#dropped} message(s) dropped unread so far`);
    }
  }

  /** The events of `stream` after `seq`, oldest first. */
  after(stream: EventStream, seq: number): Recorded[] {
    return this.#events.filter((e) => e.stream === stream && e.seq > seq);
  }

  /** Marks `stream`'s unread events read and returns their messages (to send on another stream). */
  takeUndelivered(stream: EventStream): string[] {
    const taken = this.#events.filter((e) => e.stream === stream && !e.delivered);
    for (const e of taken) e.delivered = true;
    return taken.map((e) => e.text);
  }

  forget(stream: EventStream): void {
    if (!this.#events.some((e) => e.stream === stream)) this.#streams.delete(stream.id);
  }
}

/**
 * One logical SSE stream (a POSTed request's, or the session's standing GET stream): its events
 * are numbered and kept in the session's log; the HTTP response carrying it may come and go.
 */
export class EventStream {
  readonly id: string;
  readonly #log: ReplayLog;
  #carrier: SseStream | undefined;
  #seq = 0;
  #primed = false;
  /** The highest event number dropped from the log; a resume from before it is refused. */
  evictedThrough = 0;
  /** Its request was answered: a resumed carrier gets the rest and is ended. */
  finished = false;

  constructor(id: string, log: ReplayLog, carrier?: SseStream) {
    this.id = id;
    this.#log = log;
    this.#carrier = carrier;
  }

  get live(): boolean {
    return this.#carrier?.open ?? false;
  }

  /** Whether the client was told an event id of this stream (it can resume it). */
  get primed(): boolean {
    return this.#primed;
  }

  /** Records `message` and sends it if a carrier is open; true when it went out now. */
  send(message: Message | string): boolean {
    const text = typeof message === 'string' ? message : JSON.stringify(message);
    const seq = ++this.#seq;
    const delivered = this.#carrier?.write(`${this.id}.${seq}`, text) ?? false;
    this.#log.record(this, seq, text, delivered);
    return delivered;
  }

  /** The first event, without data, that gives the client an id to resume from. */
  prime(): void {
    if (this.#carrier?.prime(`${this.id}.0`)) this.#primed = true;
  }

  /** A reconnect with Last-Event-ID: what it missed, then this carrier takes the stream over. */
  resume(seq: number, carrier: SseStream): void {
    if (seq < this.evictedThrough) {
      throw new HttpRefusal(
        409,
        `Conflict: the events after this Last-Event-ID are no longer kept (more than ${this.#log.limits.maxEvents} events or ${this.#log.limits.maxBytes} bytes behind); start a new session`,
      );
    }
    this.attach(carrier);
    for (const event of this.#log.after(this, seq)) {
      event.delivered = carrier.write(`${this.id}.${event.seq}`, event.text) || event.delivered;
    }
    if (this.finished) this.end();
  }

  /** A new carrier for this stream (the old one, if any, is ended). */
  attach(carrier: SseStream): void {
    this.#carrier?.end();
    this.#carrier = carrier.start();
  }

  end(): void {
    this.finished = true;
    this.#carrier?.end();
    this.#log.forget(this);
  }
}

/**
 * One HTTP response carrying Server-Sent Events. A client that stops reading is cut off once
 * `maxBuffered` bytes wait in the socket: what it missed stays in the log for a resume.
 */
export class SseStream {
  readonly #res: ServerResponse;
  readonly #headers: Record<string, string>;
  readonly #maxBuffered: number;
  #started = false;
  #open = true;

  constructor(res: ServerResponse, headers: Record<string, string>, maxBuffered: number) {
    this.#res = res;
    this.#headers = headers;
    this.#maxBuffered = maxBuffered;
    res.on('close', () => {
      this.#open = false;
    });
  }

  /** Sends the headers (separately, so that a refused resume can still answer with an error). */
  start(): this {
    if (this.#started) return this;
    this.#started = true;
    this.#res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      ...this.#headers,
    });
    this.#res.flushHeaders();
    return this;
  }

  get open(): boolean {
    return this.#started && this.#open && !this.#res.writableEnded && !this.#res.destroyed;
  }

  prime(id: string): boolean {
    if (!this.open) return false;
    this.#res.write(`id: ${id}\ndata:\n\n`);
    return true;
  }

  write(id: string, text: string): boolean {
    if (!this.open) return false;
    if (this.#res.writableLength > this.#maxBuffered) {
      this.#open = false;
      this.#res.destroy();
      return false;
    }
    this.#res.write(`id: ${id}\nevent: message\ndata: ${text}\n\n`);
    return true;
  }

  end(): void {
    if (this.open) this.#res.end();
    this.#open = false;
  }
}
