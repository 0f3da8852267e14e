import type { ServerResponse } from 'node:http';
import type { EventStream } from './replay.js';
import type { Message } from './upstream.js';

/** A key for a JSON-RPC id that tells 1 from "1". */
export function idKey(id: unknown): string | undefined {
  if (typeof id === 'string') return `s:${id}`;
  if (typeof id === 'number') return `n:${id}`;
  return undefined;
}

export function isResponse(message: Message): boolean {
  return message.method === undefined && ('result' in message || 'error' in message);
}

export function isRequest(message: Message): boolean {
  return typeof message.method === 'string' && idKey(message.id) !== undefined;
}

/** The progress token a request asks for, so that its progress goes to its own stream. */
export function progressTokenOf(message: Message): string | undefined {
  const params = message.params as { _meta?: { progressToken?: unknown } } | undefined;
  return idKey(params?._meta?.progressToken);
}

/**
 * One POSTed request waiting for its response: answered on its SSE stream (with what the server
 * sends meanwhile) or, when the client accepts only JSON, as one JSON body. A stream the client
 * can resume keeps its messages while the client is away; else they must go elsewhere.
 */
export class Exchange {
  readonly #res: ServerResponse;
  readonly #stream: EventStream | undefined;
  readonly #headers: Record<string, string>;
  readonly progressToken: string | undefined;
  #done = false;

  constructor(
    res: ServerResponse,
    stream: EventStream | undefined,
    headers: Record<string, string>,
    progressToken?: string,
  ) {
    this.#res = res;
    this.#headers = headers;
    this.#stream = stream;
    this.progressToken = progressToken;
  }

  /** Whether a message other than the response can reach this client here now. */
  get streaming(): boolean {
    return this.#stream?.live ?? false;
  }

  get #keeps(): boolean {
    return this.#stream !== undefined && (this.#stream.live || this.#stream.primed);
  }

  /** The server's message; false when it could not be delivered or kept here. */
  send(message: Message): boolean {
    if (!this.#stream || !this.#keeps) return false;
    this.#stream.send(message);
    return true;
  }

  /** The response: ends the exchange. False when the client had gone (it must go elsewhere). */
  answer(message: Message): boolean {
    this.#done = true;
    if (this.#stream) {
      const kept = this.#keeps;
      if (kept) this.#stream.send(message);
      this.#stream.end();
      return kept;
    }
    if (this.#res.destroyed || this.#res.writableEnded) return false;
    sendJson(this.#res, 200, message, this.#headers);
    return true;
  }

  /**
   * No answer will come (the client went away, or cancelled): the stream ends and leaves the log;
   * a JSON response that waits is cut off, as there is nothing to put in it.
   */
  abandon(): void {
    this.#done = true;
    if (this.#stream) this.#stream.end();
    else if (!this.#res.writableEnded) this.#res.destroy();
  }

  get done(): boolean {
    return this.#done;
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

export function jsonRpcError(id: unknown, code: number, message: string): Message {
  return { jsonrpc: '2.0', id: idKey(id) === undefined ? null : id, error: { code, message } };
}
