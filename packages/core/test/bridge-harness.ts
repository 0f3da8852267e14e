import { type PassThrough, Writable } from 'node:stream';
import { type BridgeSession, type SandboxBackend, silentLogger, startBridge } from '../src/index.js';

/**
 * A bridge session on `backend` running `command`, with `input` as the client's stdin, its
 * stdout dropped, and what it shows the user on stderr kept for `shown()`.
 */
export function bridgeWith(
  backend: SandboxBackend,
  command: readonly string[],
  input: PassThrough,
): { readonly session: BridgeSession; shown(): string } {
  const chunks: Buffer[] = [];
  const session = startBridge({
    backend,
    command,
    spec: { sessionId: 's', env: {}, ttlMs: 10_000 },
    input,
    output: new Writable({ write: (_c, _e, done) => done() }),
    errorOutput: new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk);
        done();
      },
    }),
    logger: silentLogger,
  });
  return { session, shown: () => Buffer.concat(chunks).toString() };
}
