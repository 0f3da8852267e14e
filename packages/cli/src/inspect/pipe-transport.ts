import type { PassThrough } from 'node:stream';
import { type FrameHandler, LineFramer } from '@mcpsandbox/core';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';

/**
 * A client transport over the bridge's in-memory pipes, framed by core's line framer. It carries
 * `pid` and `stderr` as a stdio transport does: the v2 client then treats a silent or closing
 * server during its `server/discover` probe as a 2025 server (as on a local pipe), not an outage.
 */
export class PipeTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** Not a process of this one: the server runs behind the bridge. */
  readonly pid = null;
  readonly stderr = null;
  readonly #out: PassThrough;
  readonly #in: PassThrough;
  #closed = false;

  constructor(out: PassThrough, input: PassThrough) {
    this.#out = out;
    this.#in = input;
  }

  async start(): Promise<void> {
    const framer = new LineFramer();
    const handler: FrameHandler = {
      line: (line) => {
        try {
          this.onmessage?.(JSON.parse(line.toString()) as JSONRPCMessage);
        } catch (error) {
          this.onerror?.(error as Error);
        }
      },
      oversize: () => this.onerror?.(new Error('oversize message from the server')),
    };
    this.#in.on('data', (chunk: Buffer) => framer.push(chunk, handler));
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!this.#closed) this.#out.write(`${JSON.stringify(message)}\n`);
  }

  /** The session ended: what the client waits for fails now rather than at its timeout. */
  ended(): void {
    this.onclose?.();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#out.end();
  }
}
