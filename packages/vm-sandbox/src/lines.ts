import { PendingBytes } from '@mcpsandbox/core';

/**
 * Splits a byte stream into lines in linear time: an unfinished line waits in `PendingBytes` (small
 * chunks merged, so a line sent a byte at a time costs about its size, not an object per byte) and
 * only the bytes of each new chunk are searched for the newline. A line is decoded once it is
 * complete, so a UTF-8 character split across chunks is whole.
 */
export class LineSplitter {
  readonly #maxLine: number;
  readonly #pending = new PendingBytes();

  constructor(maxLine: number) {
    this.#maxLine = maxLine;
  }

  /** Bytes of the unfinished line held, and the objects holding them (for tests). */
  get pending(): { readonly bytes: number; readonly parts: number } {
    return { bytes: this.#pending.length, parts: this.#pending.parts };
  }

  /** Hands every complete line to `onLine`; false when the unfinished line passed `maxLine`. */
  push(chunk: Uint8Array, onLine: (line: string) => void): boolean {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    let index = bytes.indexOf(10, start);
    while (index >= 0) {
      const piece = bytes.subarray(start, index);
      const line = this.#pending.length === 0 ? piece : this.#pending.takeAll(piece);
      onLine(line.toString('utf8'));
      start = index + 1;
      index = bytes.indexOf(10, start);
    }
    if (start < bytes.length) this.#pending.append(bytes.subarray(start));
    return this.#pending.length <= this.#maxLine;
  }
}
