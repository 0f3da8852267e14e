import { PendingBytes } from '@mcpsandbox/core';

/**
 * A single-consumer async iterable of bytes with a high-water mark: `push` resolves once the
 * consumer has brought the buffer back under the mark, which the SDK awaits before reading the
 * next event, so a slow reader slows the stream instead of growing memory. The mark counts bytes,
 * so small chunks are merged as they wait (`PendingBytes`): a million one-byte frames cost about a
 * megabyte, not a million objects. Chunk boundaries are not kept; a chunk read at once stays as it
 * came.
 */
export class ByteQueue implements AsyncIterable<Uint8Array> {
  readonly #pending = new PendingBytes();
  readonly #highWater: number;
  #ended = false;
  #reader: (() => void) | undefined;
  #drained: (() => void)[] = [];

  constructor(highWaterBytes: number) {
    this.#highWater = highWaterBytes;
  }

  /** Bytes waiting, and the objects holding them (for tests). */
  get pending(): { readonly bytes: number; readonly parts: number } {
    return { bytes: this.#pending.length, parts: this.#pending.parts };
  }

  /** Keeps `chunk` (a view of it, or a copy): the caller must not change it afterwards. */
  push(chunk: Uint8Array): Promise<void> {
    if (this.#ended || chunk.length === 0) return Promise.resolve();
    this.#pending.append(chunk);
    this.#wake();
    if (this.#pending.length < this.#highWater) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /** No more chunks; what is buffered is still delivered. Releases blocked producers. */
  end(): void {
    this.#ended = true;
    this.#release();
    this.#wake();
  }

  #wake() {
    const reader = this.#reader;
    this.#reader = undefined;
    reader?.();
  }

  #release() {
    const waiting = this.#drained;
    this.#drained = [];
    for (const resolve of waiting) resolve();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const chunk = this.#pending.shift();
      if (chunk) {
        if (this.#pending.length < this.#highWater) this.#release();
        yield chunk;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => {
        this.#reader = resolve;
      });
    }
  }
}
