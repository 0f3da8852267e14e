/**
 * Byte-level line framing for newline-delimited JSON-RPC. Chunks are split on `\n` without
 * decoding, so a UTF-8 character split across chunks survives; a partial line is kept until its
 * newline arrives. A line over `maxLineBytes` is not buffered: its first bytes are kept (to find
 * the request id) and the rest is counted and dropped.
 */

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
  #pending: Buffer[] = [];
  #pendingBytes = 0;
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
      let line = piece;
      if (this.#pendingBytes > 0) {
        this.#pending.push(piece);
        line = Buffer.concat(this.#pending, this.#pendingBytes + piece.length);
        this.#pending = [];
        this.#pendingBytes = 0;
      }
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
    if (this.#pendingBytes === 0) return;
    const line = Buffer.concat(this.#pending, this.#pendingBytes);
    this.#pending = [];
    this.#pendingBytes = 0;
    handler.line(line);
  }

  #keep(part: Buffer): void {
    if (this.#discard) {
      this.#discard.size += part.length;
      return;
    }
    this.#pending.push(part);
    this.#pendingBytes += part.length;
    if (this.#pendingBytes > this.maxLineBytes) {
      const all = Buffer.concat(this.#pending, this.#pendingBytes);
      this.#discard = { head: Buffer.from(all.subarray(0, OVERSIZE_HEAD_BYTES)), size: all.length };
      this.#pending = [];
      this.#pendingBytes = 0;
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
