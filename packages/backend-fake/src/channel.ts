/**
 * A one-way, bounded byte pipe between a writer and a reader in the same process: the in-memory
 * stand-in for an OS pipe. Chunks keep their order and their boundaries; a write is accepted
 * while fewer than `highWaterMark` bytes wait to be read, otherwise it waits for the reader, so
 * memory stays bounded by `highWaterMark` plus one chunk.
 */

interface PendingWrite {
  readonly chunk: Uint8Array;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

interface WaitingRead {
  readonly resolve: (result: IteratorResult<Uint8Array>) => void;
  readonly reject: (error: unknown) => void;
}

export const DEFAULT_HIGH_WATER_MARK = 64 * 1024;

export class ByteChannel implements AsyncIterable<Uint8Array> {
  readonly highWaterMark: number;
  /** Accepted chunks not read yet; `#head` avoids O(n) shifts with many tiny chunks. */
  #buffer: Uint8Array[] = [];
  #head = 0;
  #buffered = 0;
  #pending: PendingWrite[] = [];
  #readers: WaitingRead[] = [];
  /** The writer asked for EOF; it takes effect once every pending write is accepted. */
  #endRequested = false;
  /** EOF is final: no more chunks will be accepted. */
  #ended = false;
  /** Set when writes fail from now on (reader gone, process dead). */
  #writeError: unknown;
  /** Set when reads fail from now on (the reading side was torn down). */
  #readError: unknown;
  #cancelled = false;
  readonly #cancelError: () => unknown;

  /**
   * @param cancelError what writes fail with once the reader stops reading (leaves its loop early).
   */
  constructor(options: { highWaterMark?: number; cancelError?: () => unknown } = {}) {
    const highWaterMark = options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
    if (!(highWaterMark > 0)) throw new RangeError('highWaterMark must be positive');
    this.highWaterMark = highWaterMark;
    this.#cancelError = options.cancelError ?? (() => new Error('the reader stopped reading (EPIPE)'));
  }

  /** Bytes accepted and not read yet. */
  get buffered(): number {
    return this.#buffered;
  }

  /** Resolves once the chunk is accepted (buffered for the reader); rejects if it never will be. */
  write(chunk: Uint8Array): Promise<void> {
    if (this.#writeError !== undefined) return Promise.reject(this.#writeError);
    if (this.#endRequested) return Promise.reject(new Error('write after end'));
    // Copy (Buffer#slice would not): the caller may reuse its buffer, as with a real pipe.
    const copy = new Uint8Array(chunk);
    if (this.#pending.length === 0 && this.#buffered < this.highWaterMark) {
      this.#accept(copy);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      this.#pending.push({ chunk: copy, resolve, reject });
    });
  }

  /** EOF for the reader, after every write already made has been accepted and read. */
  end(): void {
    if (this.#endRequested) return;
    this.#endRequested = true;
    this.#settleEnd();
  }

  /**
   * The writer is gone (its process died): writes not yet accepted fail with `error`, later ones
   * too, and the reader gets what was accepted, then EOF.
   */
  abortWrites(error: unknown): void {
    if (this.#writeError === undefined) this.#writeError = error;
    this.#endRequested = true;
    for (const pending of this.#pending.splice(0)) pending.reject(error);
    this.#settleEnd();
  }

  /** The reader is gone: buffered bytes are dropped and every read and write fails with `error`. */
  abortReads(error: unknown): void {
    if (this.#readError === undefined) this.#readError = error;
    this.#dropBuffer();
    for (const reader of this.#readers.splice(0)) reader.reject(error);
    this.abortWrites(error);
  }

  /** The next chunk, or `done` at EOF. */
  read(): Promise<IteratorResult<Uint8Array>> {
    if (this.#readError !== undefined) return Promise.reject(this.#readError);
    const chunk = this.#take();
    if (chunk) return Promise.resolve({ done: false, value: chunk });
    if (this.#ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => {
      this.#readers.push({ resolve, reject });
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () => this.read(),
      // Leaving a `for await` early closes the read end, as destroying a pipe does (EPIPE).
      return: async () => {
        this.cancel();
        return { done: true, value: undefined };
      },
    };
  }

  /** The reader gives up: buffered bytes are dropped, reads see EOF and writes fail. */
  cancel(): void {
    if (this.#cancelled) return;
    this.#cancelled = true;
    this.#dropBuffer();
    const error = this.#cancelError();
    if (this.#writeError === undefined) this.#writeError = error;
    this.#endRequested = true;
    this.#ended = true;
    for (const pending of this.#pending.splice(0)) pending.reject(error);
    for (const reader of this.#readers.splice(0)) reader.resolve({ done: true, value: undefined });
  }

  #accept(chunk: Uint8Array): void {
    const reader = this.#readers.shift();
    if (reader) {
      reader.resolve({ done: false, value: chunk });
      return;
    }
    this.#buffer.push(chunk);
    this.#buffered += chunk.length;
  }

  #take(): Uint8Array | undefined {
    if (this.#head >= this.#buffer.length) return undefined;
    const chunk = this.#buffer[this.#head]!;
    this.#buffer[this.#head] = EMPTY;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#buffer.length) {
      this.#buffer = this.#buffer.slice(this.#head);
      this.#head = 0;
    }
    this.#buffered -= chunk.length;
    this.#pump();
    return chunk;
  }

  /** Moves waiting writes into the buffer while there is room. */
  #pump(): void {
    while (this.#pending.length > 0 && this.#buffered < this.highWaterMark) {
      const pending = this.#pending.shift()!;
      this.#accept(pending.chunk);
      pending.resolve();
    }
    this.#settleEnd();
  }

  #settleEnd(): void {
    if (!this.#endRequested || this.#pending.length > 0 || this.#ended) return;
    this.#ended = true;
    if (this.#head >= this.#buffer.length) {
      for (const reader of this.#readers.splice(0)) reader.resolve({ done: true, value: undefined });
    }
  }

  #dropBuffer(): void {
    this.#buffer = [];
    this.#head = 0;
    this.#buffered = 0;
  }
}

const EMPTY = new Uint8Array(0);
