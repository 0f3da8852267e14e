/** The server's stderr (and setup output) on the user's, and writes that wait for a full stream. */
import type { Writable } from 'node:stream';
import { type FrameHandler, LineFramer } from './framing.js';
import type { Logger } from './logger.js';
import type { ServerOutputHints } from './path-hints.js';
import type { Redactor } from './secrets.js';
import { ControlEscaper, escapeControls } from './terminal.js';
import type { TraceSink } from './trace.js';

export interface StderrRelayOptions {
  readonly out: Writable;
  readonly logger: Logger;
  readonly trace: TraceSink | undefined;
  readonly redact: Redactor;
  /** For the head of an oversize line, which may end inside a secret (default: `redact`). */
  readonly redactHead?: Redactor;
  /** No trace and no secret to redact: chunks pass as they come, escaped, without framing. */
  readonly plain: boolean;
  /** The server's own stderr only: each chunk or line is shown to the hints after it went out. */
  readonly hints?: ServerOutputHints | undefined;
}

/**
 * Control characters escaped, whether stderr is a terminal or a log file a terminal shows later.
 * The trace keeps the exact text.
 */
export async function relayStderr(
  stream: AsyncIterable<Uint8Array>,
  options: StderrRelayOptions,
): Promise<void> {
  const { out, trace, redact, hints } = options;
  const redactHead = options.redactHead ?? redact;
  try {
    if (options.plain) {
      const escaper = new ControlEscaper();
      for await (const chunk of stream) {
        await writeStream(out, escaper.write(chunk));
        hints?.chunk(chunk);
      }
      const rest = escaper.end();
      if (rest) await writeStream(out, rest);
      hints?.end();
      return;
    }
    const framer = new LineFramer({ maxLineBytes: 1024 * 1024 });
    const lines: string[] = [];
    const handler: FrameHandler = {
      line: (line) => lines.push(redact(line.toString())),
      oversize: (head, size) => lines.push(`${redactHead(head.toString())}… [${size} bytes]\n`),
    };
    const flush = async () => {
      for (const line of lines) {
        const text = line.endsWith('\n') ? line.slice(0, -1) : line;
        trace?.event('stderr', { text });
        await writeStream(out, `${escapeControls(text)}\n`);
        hints?.line(text);
      }
      lines.length = 0;
    };
    for await (const chunk of stream) {
      framer.push(chunk, handler);
      await flush();
    }
    framer.end(handler);
    await flush();
    hints?.end();
  } catch (error) {
    options.logger.debug(`stderr relay failed: ${(error as Error).message}`);
  }
}

/** Writes with backpressure: waits for `drain` when the stream's buffer is full. */
export async function writeStream(stream: Writable, data: Uint8Array | string): Promise<void> {
  if (stream.destroyed || stream.writableEnded) return;
  if (stream.write(data)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      stream.off('error', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}
