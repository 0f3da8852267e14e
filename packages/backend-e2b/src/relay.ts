import { type FrameHandler, LineFramer, type SandboxEvent } from '@mcpsandbox/core';
import { stripControl } from './text.js';

/** Longest install output line relayed whole; longer ones are cut and their size noted. */
const MAX_LINE_BYTES = 16 * 1024;

/**
 * Relays what an install step prints to the host's stderr the way server stderr is relayed:
 * whole lines, control characters escaped, granted secrets redacted, and each line in the trace
 * (as a sandbox `install-output` event).
 */
export class OutputRelay {
  readonly #framer = new LineFramer({ maxLineBytes: MAX_LINE_BYTES });
  readonly #handler: FrameHandler;

  constructor(
    write: (chunk: Uint8Array) => void,
    onEvent: ((event: SandboxEvent) => void) | undefined,
    redact: (text: string) => string,
  ) {
    const emit = (text: string) => {
      // The trace keeps the line as it was (secrets redacted); the terminal sees it escaped.
      const line = redact(text.replace(/\r?\n$/, ''));
      onEvent?.({ type: 'install-output', text: line });
      write(Buffer.from(`${stripControl(line)}\n`));
    };
    this.#handler = {
      line: (line) => emit(line.toString()),
      oversize: (head, size) => emit(`${head.toString()}… [${size} bytes]`),
    };
  }

  push(chunk: Uint8Array): void {
    this.#framer.push(chunk, this.#handler);
  }

  end(): void {
    this.#framer.end(this.#handler);
  }
}
