import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpRefusal, newSessionId } from './guard.js';
import {
  Exchange,
  idKey,
  isRequest,
  isResponse,
  jsonRpcError,
  progressTokenOf,
  SseStream,
} from './streams.js';
import type { Message, Upstream } from './upstream.js';

export const SESSION_HEADER = 'mcp-session-id';
/** Server messages kept for a client that has no stream open right now (then the oldest go). */
const BACKLOG_LIMIT = 1000;

/**
 * One 2025-11-25 session: one client, one sandboxed server of its own. The server's messages go
 * to the stream of the request they belong to (its response, its progress), else to the client's
 * GET stream, else to the newest open request stream, else into a backlog that the next stream
 * receives: a client that disconnects loses nothing it can pick up again.
 */
export class Session {
  readonly id: string;
  readonly upstream: Upstream;
  readonly #exchanges = new Map<string, Exchange>();
  readonly #backlog: Message[] = [];
  #listen: SseStream | undefined;
  #closed = false;

  constructor(id: string, start: (onMessage: (message: Message) => void) => Upstream) {
    this.id = id;
    this.upstream = start((message) => this.#fromServer(message));
  }

  /** A POSTed message: requests wait on `res`; notifications and responses are accepted at once. */
  post(message: Message, req: IncomingMessage, res: ServerResponse): void {
    const headers = { [SESSION_HEADER]: this.id };
    if (!isRequest(message)) {
      this.upstream.send(message);
      res.writeHead(202, headers).end();
      return;
    }
    const key = idKey(message.id) as string;
    if (this.#exchanges.has(key)) {
      throw new HttpRefusal(400, 'Bad Request: a request with this id is already in flight');
    }
    const sse = (req.headers.accept ?? '').includes('text/event-stream');
    const exchange = new Exchange(res, sse, headers, progressTokenOf(message));
    this.#exchanges.set(key, exchange);
    if (sse) this.#flushBacklog();
    this.upstream.send(message);
  }

  /** The client's standing stream for messages that belong to no request. */
  listen(res: ServerResponse): void {
    if (this.#listen?.open)
      throw new HttpRefusal(409, 'Conflict: this session already has a GET stream open');
    this.#listen = new SseStream(res, { [SESSION_HEADER]: this.id });
    this.#flushBacklog();
  }

  /** DELETE, or the listener shutting down: the server drains what it owes, then stops. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.upstream.close();
  }

  /** The sandbox is gone: every waiting request gets an error and every stream ends. */
  ended(): void {
    this.#closed = true;
    for (const [key, exchange] of this.#exchanges) {
      exchange.answer(jsonRpcError(keyToId(key), -32000, 'the sandboxed server ended'));
    }
    this.#exchanges.clear();
    this.#listen?.end();
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
    if (this.#listen?.send(message)) return;
    const open = [...this.#exchanges.values()].filter((e) => e.streaming);
    if (open.at(-1)?.send(message)) return;
    this.#backlog.push(message);
    if (this.#backlog.length > BACKLOG_LIMIT) this.#backlog.shift();
  }

  #flushBacklog(): void {
    const waiting = this.#backlog.splice(0);
    for (const message of waiting) this.#loose(message);
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

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#sessions.size;
  }

  get(id: string): Session | undefined {
    return this.#sessions.get(id);
  }

  open(start: (onMessage: (message: Message) => void) => Upstream): Session {
    if (this.#sessions.size >= this.#max) {
      throw new HttpRefusal(
        503,
        `Service Unavailable: ${this.#max} sessions are open; end one or retry later`,
        {
          'retry-after': '5',
        },
      );
    }
    const session = new Session(newSessionId(), start);
    this.#sessions.set(session.id, session);
    void session.upstream.done.then(() => {
      this.#sessions.delete(session.id);
      session.ended();
    });
    return session;
  }

  all(): Session[] {
    return [...this.#sessions.values()];
  }
}
