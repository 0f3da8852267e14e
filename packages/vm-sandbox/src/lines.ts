/**
 * Splits a byte stream into lines in linear time: chunks wait in a list and only the bytes of
 * each new chunk are searched for the newline. A line is decoded once it is complete, so a UTF-8
 * character split across chunks is whole.
 */
export class LineSplitter {
  readonly #maxLine: number;
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(maxLine: number) {
    this.#maxLine = maxLine;
  }

  /** Hands every complete line to `onLine`; false when the unfinished line passed `maxLine`. */
  push(chunk: Uint8Array, onLine: (line: string) => void): boolean {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    let index = bytes.indexOf(10, start);
    while (index >= 0) {
      const piece = bytes.subarray(start, index);
      if (this.#chunks.length === 0) onLine(piece.toString('utf8'));
      else {
        this.#chunks.push(piece);
        const line = Buffer.concat(this.#chunks, this.#size + piece.length);
        this.#chunks = [];
        this.#size = 0;
        onLine(line.toString('utf8'));
      }
      start = index + 1;
      index = bytes.indexOf(10, start);
    }
    if (start < bytes.length) {
      this.#chunks.push(bytes.subarray(start));
      this.#size += bytes.length - start;
    }
    return this.#size <= this.#maxLine;
  }
}
