import type { ServerResponse } from 'node:http';
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

/** One open HTTP response that carries server messages as Server-Sent Events. */
export class SseStream {
  readonly #res: ServerResponse;
  #open = true;

  constructor(res: ServerResponse, headers: Record<string, string>) {
    this.#res = res;
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      ...headers,
    });
    res.flushHeaders();
    res.on('close', () => {
      this.#open = false;
    });
  }

  get open(): boolean {
    return this.#open && !this.#res.writableEnded;
  }

  /** Sends one message; false when the client has gone and the message must go elsewhere. */
  send(message: Message): boolean {
    if (!this.open) return false;
    this.#res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    return true;
  }

  end(): void {
    if (this.open) this.#res.end();
    this.#open = false;
  }
}

/**
 * One POSTed request waiting for its response: answered on its SSE stream (with what the server
 * sends meanwhile) or, when the client accepts only JSON, as one JSON body.
 */
export class Exchange {
  readonly #res: ServerResponse;
  readonly #stream: SseStream | undefined;
  readonly #headers: Record<string, string>;
  readonly progressToken: string | undefined;
  #done = false;

  constructor(res: ServerResponse, sse: boolean, headers: Record<string, string>, progressToken?: string) {
    this.#res = res;
    this.#headers = headers;
    this.#stream = sse ? new SseStream(res, headers) : undefined;
    this.progressToken = progressToken;
  }

  /** Whether a message other than the response can still reach this client here. */
  get streaming(): boolean {
    return this.#stream?.open ?? false;
  }

  /** The server's message; false when it could not be delivered here. */
  send(message: Message): boolean {
    return this.#stream?.send(message) ?? false;
  }

  /** The response: ends the exchange. False when the client had gone (it must go elsewhere). */
  answer(message: Message): boolean {
    this.#done = true;
    if (this.#stream) {
      const sent = this.#stream.send(message);
      this.#stream.end();
      return sent;
    }
    if (this.#res.destroyed || this.#res.writableEnded) return false;
    sendJson(this.#res, 200, message, this.#headers);
    return true;
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
