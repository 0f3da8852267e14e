import { Writable } from 'node:stream';

/**
 * A stream in front of another that keeps the last few whole lines written through it, each cut
 * to a bounded length: what `inspect` shows first when a program fails without answering. It sits
 * behind `sandboxOutput`, so the lines are already prefixed and escaped.
 */
export class LastLines {
  readonly #lines: string[] = [];
  readonly #keep: number;
  readonly #width: number;
  #partial = '';

  constructor(keep = 5, width = 300) {
    this.#keep = keep;
    this.#width = width;
  }

  /** Everything written goes to `out` unchanged, and is read here on the way. */
  tee(out: Writable): Writable {
    return new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        this.#take(chunk.toString('utf8'));
        out.write(chunk, (error) => done(error ?? null));
      },
      final: (done) => {
        this.#flush();
        done();
      },
    });
  }

  /** The kept lines, oldest first, with the one not yet ended. */
  lines(): string[] {
    return this.#partial.trim()
      ? [...this.#lines, this.#cut(this.#partial)].slice(-this.#keep)
      : [...this.#lines];
  }

  #take(text: string): void {
    const parts = (this.#partial + text).split('\n');
    this.#partial = (parts.pop() ?? '').slice(-(this.#width * 4));
    for (const line of parts) this.#push(line);
  }

  #flush(): void {
    if (this.#partial) this.#push(this.#partial);
    this.#partial = '';
  }

  #push(line: string): void {
    if (!line.trim()) return;
    this.#lines.push(this.#cut(line));
    if (this.#lines.length > this.#keep) this.#lines.shift();
  }

  #cut(line: string): string {
    return line.length > this.#width ? `${line.slice(0, this.#width)}…` : line;
  }
}
