import { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { silentLogger, startBridge } from '../src/index.js';
import { mirrorBackend } from './memory-backend.js';
import { rng } from './rng.js';

function chop(data: Buffer, random: () => number): Buffer[] {
  const chunks: Buffer[] = [];
  const max = 1 + Math.floor(random() * 64);
  for (let i = 0; i < data.length; ) {
    const size = 1 + Math.floor(random() * max);
    chunks.push(Buffer.from(data.subarray(i, i + size)));
    i += size;
  }
  return chunks;
}

function sink(): { stream: Writable; bytes: () => Buffer; writes: Buffer[] } {
  const writes: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      writes.push(Buffer.from(chunk));
      done();
    },
  });
  return { stream, writes, bytes: () => Buffer.concat(writes) };
}

const PIECES = [
  (i: number) => `{"jsonrpc":"2.0","id":${i},"result":{"text":"héllo €𝄞 ${i}"}}`,
  (i: number) => `{"jsonrpc":"2.0","id":"s-${i}","result":{"big":"${'z'.repeat(i % 500)}"}}`,
  () => '{"jsonrpc":"2.0","id":9007199254740993,"result":{}}',
  (i: number) => `{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":${i}}}`,
];

describe('bridge under randomized chunking', () => {
  it('forwards 1,000 seeded sessions byte for byte, whole lines only, both directions', async () => {
    for (let seed = 1; seed <= 1000; seed++) {
      const random = rng(seed);
      const count = 1 + Math.floor(random() * 20);
      const lines = Array.from({ length: count }, (_, i) => {
        const piece = PIECES[Math.floor(random() * PIECES.length)] as (i: number) => string;
        return `${piece(i)}${random() < 0.2 ? '\r' : ''}\n`;
      });
      const input = Buffer.from(lines.join(''));
      const out = sink();
      const backend = mirrorBackend({ rechunk: (data) => chop(data, random) });
      const session = startBridge({
        backend,
        command: ['mirror'],
        spec: { sessionId: `s${seed}`, env: {}, ttlMs: 60_000 },
        input: Readable.from(chop(input, random)),
        output: out.stream,
        errorOutput: sink().stream,
        logger: silentLogger,
      });
      const result = await session.done;
      expect(out.bytes().equals(input), `seed ${seed}`).toBe(true);
      // Every write the client sees is one or more whole lines.
      for (const write of out.writes) expect(write[write.length - 1], `seed ${seed}`).toBe(10);
      expect(result.exitCode).toBe(0);
      expect(backend.closed).toBe(1);
    }
  }, 120_000);
});
