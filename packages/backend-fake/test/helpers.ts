import type { SandboxProcess } from '@mcpsandbox/core';

export async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Reads a byte stream line by line (`\n`-terminated, the terminator included). */
export class Lines {
  readonly #iterator: AsyncIterator<Uint8Array>;
  #buffer = Buffer.alloc(0);
  /** Every chunk as it arrived, to check chunking. */
  readonly chunks: Uint8Array[] = [];

  constructor(stream: AsyncIterable<Uint8Array>) {
    this.#iterator = stream[Symbol.asyncIterator]();
  }

  /** The next line with its terminator, or undefined at EOF. */
  async raw(): Promise<string | undefined> {
    for (;;) {
      const newline = this.#buffer.indexOf(10);
      if (newline !== -1) {
        const line = this.#buffer.subarray(0, newline + 1).toString();
        this.#buffer = this.#buffer.subarray(newline + 1);
        return line;
      }
      const next = await this.#iterator.next();
      if (next.done) {
        if (this.#buffer.length === 0) return undefined;
        const rest = this.#buffer.toString();
        this.#buffer = Buffer.alloc(0);
        return rest;
      }
      this.chunks.push(next.value);
      this.#buffer = Buffer.concat([this.#buffer, next.value]);
    }
  }

  /** The next line that parses as JSON, skipping others into `skipped`. */
  async json(skipped: string[] = []): Promise<Record<string, unknown>> {
    for (;;) {
      const line = await this.raw();
      if (line === undefined) throw new Error('EOF before a JSON line');
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        skipped.push(line);
      }
    }
  }
}

export function send(proc: SandboxProcess, message: unknown): Promise<void> {
  const line = typeof message === 'string' ? message : JSON.stringify(message);
  return proc.write(Buffer.from(`${line}\n`));
}

export function request(id: number | string, method: string, params?: Record<string, unknown>) {
  return { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) };
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves 'pending' if `promise` has not settled within `ms` (a generous bound on a hang). */
export function stillPending<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([promise, delay(ms).then(() => 'pending' as const)]);
}

/** Lets queued promise callbacks and I/O callbacks run, a few rounds. */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}
