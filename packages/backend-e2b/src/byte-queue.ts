/**
 * A single-consumer async iterable of byte chunks with a high-water mark: `push` resolves once the
 * consumer has brought the buffer back under the mark, which the SDK awaits before reading the
 * next event, so a slow reader slows the stream instead of growing memory.
 */
export class ByteQueue implements AsyncIterable<Uint8Array> {
  readonly #chunks: Uint8Array[] = [];
  readonly #highWater: number;
  #buffered = 0;
  #ended = false;
  #reader: (() => void) | undefined;
  #drained: (() => void)[] = [];

  constructor(highWaterBytes: number) {
    this.#highWater = highWaterBytes;
  }

  push(chunk: Uint8Array): Promise<void> {
    if (this.#ended || chunk.length === 0) return Promise.resolve();
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    this.#wake();
    if (this.#buffered < this.#highWater) return Promise.resolve();
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
      const chunk = this.#chunks.shift();
      if (chunk) {
        this.#buffered -= chunk.length;
        if (this.#buffered < this.#highWater) this.#release();
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
