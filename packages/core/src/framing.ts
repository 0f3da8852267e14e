/**
 * Byte-level line framing for newline-delimited JSON-RPC. Chunks are split on `\n` without
 * decoding, so a UTF-8 character split across chunks survives; a partial line is kept until its
 * newline arrives, in memory proportional to its bytes however small its chunks (`PendingBytes`).
 * A line over `maxLineBytes` is not buffered: its first bytes are kept (to find the request id)
 * and the rest is counted and dropped.
 */

import { PendingBytes } from './pending-bytes.js';

export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;
const OVERSIZE_HEAD_BYTES = 4096;

export interface FramerOptions {
  readonly maxLineBytes?: number;
}

export interface FrameHandler {
  /** A whole line, `\n` included (absent only for a last line cut by EOF). */
  line(line: Buffer): void;
  /** A line longer than the limit: its first bytes and its full size. */
  oversize(head: Buffer, size: number): void;
}

export class LineFramer {
  readonly maxLineBytes: number;
  readonly #pending = new PendingBytes();
  /** Set while skipping the rest of an oversize line. */
  #discard: { head: Buffer; size: number } | undefined;

  constructor(options: FramerOptions = {}) {
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  }

  push(chunk: Uint8Array, handler: FrameHandler): void {
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(10, start);
      if (nl === -1) {
        if (start < buf.length) this.#keep(buf.subarray(start));
        return;
      }
      const piece = buf.subarray(start, nl + 1);
      start = nl + 1;
      if (this.#discard) {
        const { head, size } = this.#discard;
        this.#discard = undefined;
        handler.oversize(head, size + piece.length);
        continue;
      }
      const line = this.#pending.length > 0 ? this.#pending.takeAll(piece) : piece;
      if (line.length - 1 > this.maxLineBytes)
        handler.oversize(line.subarray(0, OVERSIZE_HEAD_BYTES), line.length);
      else handler.line(line);
    }
  }

  /** Flushes a last line that had no newline. */
  end(handler: FrameHandler): void {
    if (this.#discard) {
      handler.oversize(this.#discard.head, this.#discard.size);
      this.#discard = undefined;
      return;
    }
    if (this.#pending.length === 0) return;
    handler.line(this.#pending.takeAll());
  }

  /** Bytes of the unfinished line held, and the objects holding them (for tests). */
  get pending(): { readonly bytes: number; readonly parts: number } {
    return { bytes: this.#pending.length, parts: this.#pending.parts };
  }

  #keep(part: Buffer): void {
    if (this.#discard) {
      this.#discard.size += part.length;
      return;
    }
    this.#pending.append(part);
    if (this.#pending.length > this.maxLineBytes) {
      this.#discard = { head: this.#pending.head(OVERSIZE_HEAD_BYTES), size: this.#pending.length };
      this.#pending.clear();
    }
  }
}

/** The line's content without its `\n` or `\r\n`. */
export function lineContent(line: Buffer): Buffer {
  let end = line.length;
  if (end > 0 && line[end - 1] === 10) end--;
  if (end > 0 && line[end - 1] === 13) end--;
  return end === line.length ? line : line.subarray(0, end);
}

/**
 * Frames a byte stream into lines and hands them on one at a time, awaiting each: a slow
 * consumer stops the reading, which is the backpressure both directions of the bridge rely on.
 */
export async function pumpLines(
  source: AsyncIterable<Uint8Array>,
  maxLineBytes: number,
  onLine: (line: Buffer) => Promise<void>,
  onOversize: (head: Buffer, size: number) => void,
): Promise<void> {
  const framer = new LineFramer({ maxLineBytes });
  const batch: Array<Buffer | { head: Buffer; size: number }> = [];
  const handler: FrameHandler = {
    line: (line) => batch.push(line),
    oversize: (head, size) => batch.push({ head, size }),
  };
  const drain = async () => {
    for (const item of batch) {
      if (Buffer.isBuffer(item)) await onLine(item);
      else onOversize(item.head, item.size);
    }
    batch.length = 0;
  };
  for await (const chunk of source) {
    framer.push(chunk, handler);
    if (batch.length > 0) await drain();
  }
  framer.end(handler);
  await drain();
}
