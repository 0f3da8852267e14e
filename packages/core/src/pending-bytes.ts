/**
 * A FIFO of bytes whose host memory stays proportional to the bytes it holds, however they were
 * chunked. Every chunk kept as its own object costs a few hundred bytes of heap, so a stream of
 * one-byte chunks would cost hundreds of bytes per byte: chunks below {@link MERGE_BELOW_BYTES}
 * are copied into one growing buffer instead, and a view is kept only of a large chunk that uses
 * most of the memory behind it (a small view of a big buffer would keep the whole buffer alive).
 */

/** Chunks smaller than this are copied into a shared buffer rather than kept as views. */
export const MERGE_BELOW_BYTES = 16 * 1024;
const FIRST_TAIL_BYTES = 256;
/** A shared buffer grows by doubling up to this size, then a new one starts. */
const MAX_TAIL_BYTES = 64 * 1024;

export class PendingBytes {
  #parts: Buffer[] = [];
  /** The last part is a buffer being filled: its capacity, and how much of it is used. */
  #tail: Buffer | undefined;
  #tailUsed = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  /** Objects held (for tests and diagnostics): stays small whatever the chunking. */
  get parts(): number {
    return this.#parts.length + (this.#tail ? 1 : 0);
  }

  /** Keeps `chunk` (a view of it, or a copy): the caller must not change it afterwards. */
  append(chunk: Uint8Array): void {
    const buf = toBuffer(chunk);
    if (buf.length === 0) return;
    this.#length += buf.length;
    if (buf.length >= MERGE_BELOW_BYTES && !pins(buf)) {
      this.#seal();
      this.#parts.push(buf);
      return;
    }
    if (!this.#tail) {
      const last = this.#parts.at(-1);
      // One small chunk alone is kept as it is; a second one starts the shared buffer.
      if (last === undefined || last.length >= MERGE_BELOW_BYTES) {
        this.#parts.push(pins(buf) ? copyOf(buf) : buf);
        return;
      }
      this.#parts.pop();
      this.#open(last.length + buf.length);
      this.#write(last);
    } else if (this.#tailUsed + buf.length > this.#tail.length) {
      this.#grow(buf.length);
    }
    this.#write(buf);
  }

  /** Everything held, then `last`, as one buffer; empties the FIFO. */
  takeAll(last?: Uint8Array): Buffer {
    if (last && last.byteLength > 0) {
      const extra = toBuffer(last);
      if (this.#length === 0) return extra;
      if (this.#tail && this.#parts.length === 0 && this.#tailUsed + extra.length <= this.#tail.length) {
        this.#write(extra);
        this.#length += extra.length;
      } else {
        this.#seal();
        this.#parts.push(extra);
        this.#length += extra.length;
      }
    }
    this.#seal();
    const parts = this.#parts;
    const length = this.#length;
    this.clear();
    if (parts.length === 1) return parts[0] as Buffer;
    return Buffer.concat(parts, length);
  }

  /** Removes and returns the first `n` bytes (`n` ≤ length). */
  take(n: number): Buffer {
    if (n > this.#length) throw new RangeError(`take(${n}) of ${this.#length} pending bytes`);
    if (n === this.#length) return this.takeAll();
    this.#seal();
    const first = this.#parts[0] as Buffer;
    this.#length -= n;
    if (first.length === n) {
      this.#parts.shift();
      return first;
    }
    if (first.length > n) {
      this.#parts[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const part = this.#parts[0] as Buffer;
      const size = Math.min(n - filled, part.length);
      part.copy(out, filled, 0, size);
      filled += size;
      if (size === part.length) this.#parts.shift();
      else this.#parts[0] = part.subarray(size);
    }
    return out;
  }

  /** Removes and returns the first part as it is held (a chunk, or merged small chunks). */
  shift(): Buffer | undefined {
    if (this.#length === 0) return undefined;
    if (this.#parts.length === 0) this.#seal();
    const first = this.#parts.shift() as Buffer;
    this.#length -= first.length;
    return first;
  }

  /** A copy of the first `n` bytes (or all of them), leaving the FIFO as it was. */
  head(n: number): Buffer {
    const out = Buffer.allocUnsafe(Math.min(n, this.#length));
    let filled = 0;
    const tail = this.#tail ? [this.#tail.subarray(0, this.#tailUsed)] : [];
    for (const part of [...this.#parts, ...tail]) {
      if (filled === out.length) break;
      filled += part.copy(out, filled, 0, Math.min(part.length, out.length - filled));
    }
    return out;
  }

  clear(): void {
    this.#parts = [];
    this.#tail = undefined;
    this.#tailUsed = 0;
    this.#length = 0;
  }

  #open(need: number): void {
    this.#tail = Buffer.allocUnsafeSlow(Math.max(FIRST_TAIL_BYTES, need));
    this.#tailUsed = 0;
  }

  /** Doubles the shared buffer (copying what it holds), or seals it and starts another. */
  #grow(need: number): void {
    const tail = this.#tail as Buffer;
    if (tail.length >= MAX_TAIL_BYTES) {
      this.#seal();
      this.#open(need);
      return;
    }
    const bigger = Buffer.allocUnsafeSlow(Math.max(tail.length * 2, this.#tailUsed + need));
    tail.copy(bigger, 0, 0, this.#tailUsed);
    this.#tail = bigger;
  }

  #write(buf: Buffer): void {
    buf.copy(this.#tail as Buffer, this.#tailUsed);
    this.#tailUsed += buf.length;
  }

  #seal(): void {
    if (!this.#tail) return;
    if (this.#tailUsed > 0) this.#parts.push(this.#tail.subarray(0, this.#tailUsed));
    this.#tail = undefined;
    this.#tailUsed = 0;
  }
}

/** True for a small view that would keep a much larger buffer alive (not Node's 8 KiB pool). */
function pins(buf: Buffer): boolean {
  return buf.buffer.byteLength > MAX_TAIL_BYTES && buf.length * 2 < buf.buffer.byteLength;
}

/** A copy with memory of its own (not a slice of Node's shared pool, which it would keep alive). */
function copyOf(buf: Buffer): Buffer {
  const out = Buffer.allocUnsafeSlow(buf.length);
  buf.copy(out);
  return out;
}

function toBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}
