import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpRefusal, newSessionId } from './guard.js';
import { type EventStream, type ReplayLimits, ReplayLog, SseStream } from './replay.js';
import { Exchange, idKey, isRequest, isResponse, jsonRpcError, progressTokenOf } from './streams.js';
import type { Message, ServerLink, StartLink } from './upstream.js';

export const SESSION_HEADER = 'mcp-session-id';
/** The first revision whose clients skip data-less SSE events (the priming event). */
const PRIMING_VERSION = '2025-11-25';

/**
 * One 2025-11-25 session: one client, and the server it talks to (a sandbox of its own, or its
 * port on the shared one). The server's messages go to the stream of the request they belong to
 * (its response, its progress), else to the client's GET stream, else to the newest open request
 * stream, else they wait on the GET stream for the client to come back. Every SSE event carries an
 * id; a client that reconnects with Last-Event-ID gets what it missed from a bounded log.
 */
export class Session {
  readonly id: string;
  readonly link: ServerLink;
  readonly #exchanges = new Map<string, Exchange>();
  readonly #log: ReplayLog;
  readonly #standing: EventStream;
  #version = '';
  #closed = false;

  constructor(id: string, start: StartLink, limits: ReplayLimits, warn: (text: string) => void) {
    this.id = id;
    this.#log = new ReplayLog(limits, (text) => warn(`session ${id.slice(0, 8)}…: ${text}`));
    this.#standing = this.#log.open();
    this.link = start((message) => this.#fromServer(message));
  }

  get #headers(): Record<string, string> {
    return { [SESSION_HEADER]: this.id };
  }

  /** A POSTed message: requests wait on `res`; notifications and responses are accepted at once. */
  post(message: Message, req: IncomingMessage, res: ServerResponse): void {
    if (!isRequest(message)) {
      if (message.method === 'notifications/cancelled') this.#cancelled(message);
      this.link.send(message);
      res.writeHead(202, this.#headers).end();
      return;
    }
    const key = idKey(message.id) as string;
    if (this.#exchanges.has(key)) {
      throw new HttpRefusal(400, 'Bad Request: a request with this id is already in flight');
    }
    if (message.method === 'initialize') {
      const asked = (message.params as { protocolVersion?: unknown } | undefined)?.protocolVersion;
      if (typeof asked === 'string') this.#version = asked;
    }
    const sse = (req.headers.accept ?? '').includes('text/event-stream');
    const stream = sse ? this.#log.open(this.#carrier(res).start()) : undefined;
    if (stream && this.#version >= PRIMING_VERSION) stream.prime();
    this.#exchanges.set(key, new Exchange(res, stream, this.#headers, progressTokenOf(message)));
    if (stream) for (const text of this.#log.takeUndelivered(this.#standing)) stream.send(text);
    this.link.send(message);
  }

  /** GET: the standing stream, or with Last-Event-ID the resumption of any stream of this session. */
  listen(res: ServerResponse, lastEventId: string | undefined): void {
    if (lastEventId !== undefined) {
      const { stream, seq } = this.#log.find(lastEventId);
      stream.resume(seq, this.#carrier(res));
      return;
    }
    if (this.#standing.live)
      throw new HttpRefusal(409, 'Conflict: this session already has a GET stream open');
    this.#standing.attach(this.#carrier(res));
    if (this.#version >= PRIMING_VERSION) this.#standing.prime();
    for (const text of this.#log.takeUndelivered(this.#standing)) this.#standing.send(text);
  }

  #carrier(res: ServerResponse): SseStream {
    return new SseStream(res, this.#headers, this.#log.limits.maxBytes);
  }

  /** DELETE, or the listener shutting down: the server drains what it owes, then stops. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.link.close();
  }

  /** The server is gone: every waiting request gets an error and every stream ends. */
  ended(): void {
    this.#closed = true;
    for (const [key, exchange] of this.#exchanges) {
      exchange.answer(jsonRpcError(keyToId(key), -32000, 'the sandboxed server ended'));
    }
    this.#exchanges.clear();
    this.#standing.end();
  }

  /** The client cancelled a request: it is owed no answer, so its stream ends and is forgotten. */
  #cancelled(message: Message): void {
    const key = idKey((message.params as { requestId?: unknown } | undefined)?.requestId);
    const exchange = key === undefined ? undefined : this.#exchanges.get(key);
    if (key === undefined || !exchange) return;
    this.#exchanges.delete(key);
    exchange.abandon();
  }

  #fromServer(message: Message): void {
    if (isResponse(message)) {
      const key = idKey(message.id);
      const exchange = key === undefined ? undefined : this.#exchanges.get(key);
      if (key !== undefined && exchange) {
        this.#exchanges.delete(key);
        if (exchange.answer(message)) return;
      }
      this.#loose(message);
      return;
    }
    const token = tokenOfProgress(message);
    if (token !== undefined) {
      for (const exchange of this.#exchanges.values()) {
        if (exchange.progressToken === token && exchange.send(message)) return;
      }
    }
    this.#loose(message);
  }

  /** A message for no particular request: the GET stream, else the newest open request stream. */
  #loose(message: Message): void {
    if (this.#standing.live) {
      this.#standing.send(message);
      return;
    }
    const open = [...this.#exchanges.values()].filter((e) => e.streaming);
    if (open.at(-1)?.send(message)) return;
    this.#standing.send(message); // kept, unread, for the next stream the client opens
  }
}

function tokenOfProgress(message: Message): string | undefined {
  if (message.method !== 'notifications/progress') return undefined;
  return idKey((message.params as { progressToken?: unknown } | undefined)?.progressToken);
}

function keyToId(key: string): string | number {
  return key.startsWith('n:') ? Number(key.slice(2)) : key.slice(2);
}

/** The table of live sessions, bounded: past `max`, a new session is refused with 503. */
export class SessionTable {
  readonly #sessions = new Map<string, Session>();
  readonly #max: number;
  readonly #limits: ReplayLimits;
  readonly #warn: (text: string) => void;

  constructor(max: number, limits: ReplayLimits, warn: (text: string) => void) {
    this.#max = max;
    this.#limits = limits;
    this.#warn = warn;
  }

  get size(): number {
    return this.#sessions.size;
  }

  get(id: string): Session | undefined {
    return this.#sessions.get(id);
  }

  open(start: StartLink): Session {
    if (this.#sessions.size >= this.#max) {
      throw new HttpRefusal(
        503,
        `Service Unavailable: ${this.#max} sessions are open; end one or retry later`,
        {
          'retry-after': '5',
        },
      );
    }
    const session = new Session(newSessionId(), start, this.#limits, this.#warn);
    this.#sessions.set(session.id, session);
    void session.link.done.then(() => {
      this.#sessions.delete(session.id);
      session.ended();
    });
    return session;
  }

  all(): Session[] {
    return [...this.#sessions.values()];
  }
}
