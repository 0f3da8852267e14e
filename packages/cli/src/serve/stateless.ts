import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpRefusal } from './guard.js';
import { DEFAULT_REPLAY_LIMITS, ReplayLog, SseStream } from './replay.js';
import { Exchange, idKey, isRequest, isResponse, jsonRpcError } from './streams.js';
import type { Message, Upstream } from './upstream.js';

/** The first revision without sessions: each request carries its version in `_meta`. */
export const STATELESS_VERSION = '2026-07-28';
const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
/** The error code the 2026-07-28 HTTP binding gives a header that disagrees with its body. */
const HEADER_MISMATCH = -32020;
/** Which body field the `Mcp-Name` header mirrors, per method. */
const NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** The revision a message claims in its per-request envelope, if any. */
export function claimedVersion(message: Message): string | undefined {
  const meta = (message.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const version = meta?.[VERSION_KEY];
  return typeof version === 'string' ? version : undefined;
}

/** Whether a POST without a session belongs to the stateless revisions (by body, then header). */
export function isStateless(message: Message, req: IncomingMessage): boolean {
  const version = claimedVersion(message) ?? header(req, 'mcp-protocol-version');
  return version !== undefined && version >= STATELESS_VERSION && message.method !== 'initialize';
}

/** The 2026-07-28 standard headers: present on requests, and agreeing with the body. */
export function checkStatelessHeaders(message: Message, req: IncomingMessage): void {
  const version = header(req, 'mcp-protocol-version');
  const claimed = claimedVersion(message);
  const method = header(req, 'mcp-method');
  const mismatch = (what: string) =>
    new HttpRefusal(400, `Bad Request: the request headers and body disagree: ${what}`, {}, HEADER_MISMATCH);
  if (version !== undefined && claimed !== undefined && version !== claimed) {
    throw mismatch(`MCP-Protocol-Version is ${version}, the body names ${claimed}`);
  }
  if (method !== undefined && method !== message.method) {
    throw mismatch(`Mcp-Method is ${method}, the body names ${String(message.method)}`);
  }
  if (!isRequest(message)) return;
  if (version === undefined) throw mismatch('the required MCP-Protocol-Version header is absent');
  if (method === undefined) throw mismatch('the required Mcp-Method header is absent');
  const field = NAME_SOURCE[message.method as string];
  const value = field ? (message.params as Record<string, unknown> | undefined)?.[field] : undefined;
  if (typeof value !== 'string') return;
  const name = header(req, 'mcp-name');
  if (name === undefined) throw mismatch(`the required Mcp-Name header is absent`);
  if (decodeName(name) !== value) throw mismatch(`Mcp-Name does not match params.${field}`);
}

function decodeName(text: string): string | undefined {
  const sentinel = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/i.exec(text);
  if (!sentinel) return text;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(sentinel[1] as string, 'base64'));
  } catch {
    return undefined;
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value.trim() : undefined;
}

/**
 * Stateless requests, all through one long-lived sandboxed server: a 2026-07-28 server keeps no
 * per-client state by the protocol, and a sandbox per request would make every call pay the
 * sandbox's start (and any npx install). Ids are rewritten on the way in, so that requests from
 * different clients never collide, and restored on the way out.
 */
export class StatelessPool {
  readonly #start: (onMessage: (message: Message) => void) => Upstream;
  readonly #exchanges = new Map<string, Waiting>();
  /** Stateless streams cannot be resumed (there is no session to resume in): nothing is kept. */
  readonly #log = new ReplayLog({ maxEvents: 0, maxBytes: 0 }, () => {});
  #upstream: Upstream | undefined;
  #next = 0;

  constructor(start: (onMessage: (message: Message) => void) => Upstream) {
    this.#start = start;
  }

  post(message: Message, req: IncomingMessage, res: ServerResponse): void {
    if (isResponse(message)) {
      throw new HttpRefusal(400, 'Bad Request: JSON-RPC responses cannot be posted without a session');
    }
    const upstream = this.#ensure();
    if (!isRequest(message)) {
      // A cancellation names an id the server never saw (ids are rewritten) or another client's:
      // a stateless request is cancelled by closing its stream instead.
      if (message.method !== 'notifications/cancelled') upstream.send(message);
      res.writeHead(202).end();
      return;
    }
    const n = ++this.#next;
    const wireId = `mcp-sandbox-${n}`;
    const sse = (req.headers.accept ?? '').includes('text/event-stream');
    const stream = sse
      ? this.#log.open(new SseStream(res, {}, DEFAULT_REPLAY_LIMITS.maxBytes).start())
      : undefined;
    // Progress tokens are rewritten like ids: two clients may pick the same token.
    const meta = (message.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
    const token = meta?.progressToken;
    const wireToken = idKey(token) === undefined ? undefined : `mcp-sandbox-progress-${n}`;
    this.#exchanges.set(`s:${wireId}`, {
      id: message.id,
      token,
      exchange: new Exchange(res, stream, {}, wireToken === undefined ? undefined : `s:${wireToken}`),
    });
    const params = wireToken === undefined ? message.params : withToken(message, wireToken);
    upstream.send({ ...message, id: wireId, ...(params === undefined ? {} : { params }) });
    // The client went away before its answer: nothing of the request may stay (the stream, its
    // response and socket), and the server is told to stop working on it.
    res.on('close', () => {
      const waiting = this.#exchanges.get(`s:${wireId}`);
      if (!waiting) return;
      this.#exchanges.delete(`s:${wireId}`);
      waiting.exchange.abandon();
      upstream.send({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: wireId, reason: 'the client closed the request' },
      });
    });
  }

  close(): void {
    this.#upstream?.close();
  }

  get upstream(): Upstream | undefined {
    return this.#upstream;
  }

  #ensure(): Upstream {
    if (this.#upstream && !this.#upstream.ended) return this.#upstream;
    const upstream = this.#start((message) => this.#fromServer(message));
    this.#upstream = upstream;
    void upstream.done.then(() => {
      for (const [key, { id, exchange }] of this.#exchanges) {
        exchange.answer(jsonRpcError(id, -32000, 'the sandboxed server ended'));
        this.#exchanges.delete(key);
      }
    });
    return upstream;
  }

  #fromServer(message: Message): void {
    if (isResponse(message)) {
      const key = idKey(message.id);
      const waiting = key === undefined ? undefined : this.#exchanges.get(key);
      if (key === undefined || !waiting) return;
      this.#exchanges.delete(key);
      waiting.exchange.answer({ ...message, id: waiting.id });
      return;
    }
    // Progress goes to the request that asked for it; nothing else has a client to go to.
    const token = idKey((message.params as { progressToken?: unknown } | undefined)?.progressToken);
    if (message.method !== 'notifications/progress' || token === undefined) return;
    for (const { exchange, token: original } of this.#exchanges.values()) {
      if (exchange.progressToken !== token) continue;
      const params = { ...(message.params as Record<string, unknown>), progressToken: original };
      exchange.send({ ...message, params });
      return;
    }
  }
}

interface Waiting {
  readonly id: unknown;
  /** The client's own progress token, restored on the server's progress notifications. */
  readonly token: unknown;
  readonly exchange: Exchange;
}

function withToken(message: Message, token: string): Record<string, unknown> {
  const params = message.params as Record<string, unknown> & { _meta: Record<string, unknown> };
  return { ...params, _meta: { ...params._meta, progressToken: token } };
}
