import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { rng } from '../test/rng.js';
import { LineFramer, lineContent } from './framing.js';

function frame(chunks: Buffer[], maxLineBytes?: number) {
  const framer = new LineFramer(maxLineBytes ? { maxLineBytes } : {});
  const lines: Buffer[] = [];
  const oversize: Array<{ head: string; size: number }> = [];
  const handler = {
    line: (line: Buffer) => lines.push(Buffer.from(line)),
    oversize: (head: Buffer, size: number) => oversize.push({ head: head.toString(), size }),
  };
  for (const chunk of chunks) framer.push(chunk, handler);
  framer.end(handler);
  return { lines, oversize };
}

function chop(data: Buffer, random: () => number, maxChunk: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < data.length; ) {
    const size = 1 + Math.floor(random() * maxChunk);
    chunks.push(data.subarray(i, i + size));
    i += size;
  }
  return chunks;
}

const SAMPLES = [
  '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  '{"text":"héllo wörld €𝄞 日本語"}',
  '{"id":9007199254740993}',
  '',
  '{"a":[1,2,3]}\r',
];

describe('LineFramer', () => {
  it('gives back exactly the lines it was fed under 5,000 seeded random chunkings', () => {
    for (let seed = 1; seed <= 5000; seed++) {
      const random = rng(seed);
      const count = 1 + Math.floor(random() * 12);
      const lines = Array.from(
        { length: count },
        () => SAMPLES[Math.floor(random() * SAMPLES.length)] as string,
      );
      const input = Buffer.from(lines.map((l) => `${l}\n`).join(''));
      const { lines: out } = frame(chop(input, random, 1 + Math.floor(random() * 40)));
      expect(Buffer.concat(out).equals(input), `seed ${seed}`).toBe(true);
      expect(out.length, `seed ${seed}`).toBe(count);
    }
  });

  it('keeps a UTF-8 character split across chunks whole', () => {
    const input = Buffer.from('{"s":"€"}\n');
    const euro = input.indexOf(0xe2);
    const { lines } = frame([
      input.subarray(0, euro + 1),
      input.subarray(euro + 1, euro + 2),
      input.subarray(euro + 2),
    ]);
    expect(lines.map((l) => l.toString())).toEqual(['{"s":"€"}\n']);
  });

  it('strips \\r\\n only in lineContent, never in the forwarded line', () => {
    const { lines } = frame([Buffer.from('{"a":1}\r\n')]);
    expect(lines[0]?.toString()).toBe('{"a":1}\r\n');
    expect(lineContent(lines[0] as Buffer).toString()).toBe('{"a":1}');
  });

  it('flushes a last line without newline at end', () => {
    const { lines } = frame([Buffer.from('{"a":1}\n{"b":'), Buffer.from('2}')]);
    expect(lines.map((l) => l.toString())).toEqual(['{"a":1}\n', '{"b":2}']);
  });

  it('reports an oversize line with its head and size, without buffering it, then carries on', () => {
    const big = `{"jsonrpc":"2.0","id":7,"method":"x","params":"${'a'.repeat(5000)}"}\n`;
    const random = rng(42);
    const { lines, oversize } = frame(chop(Buffer.from(`${big}{"ok":true}\n`), random, 700), 2048);
    expect(oversize).toHaveLength(1);
    expect(oversize[0]?.size).toBe(Buffer.byteLength(big));
    expect(oversize[0]?.head.startsWith('{"jsonrpc":"2.0","id":7')).toBe(true);
    expect(lines.map((l) => l.toString())).toEqual(['{"ok":true}\n']);
  });

  it('reports an oversize line that arrives in one chunk', () => {
    const { oversize, lines } = frame([Buffer.from(`${'x'.repeat(3000)}\n{}\n`)], 1024);
    expect(oversize.map((o) => o.size)).toEqual([3001]);
    expect(lines.map(String)).toEqual(['{}\n']);
  });
});

describe('LineFramer memory per pending byte', () => {
  // Each chunk kept as its own object cost hundreds of bytes of heap: a server (or envd) that
  // sent a long line one byte at a time bloated the bridge far past the line's size.
  it('a line fed one byte per chunk is held in a handful of objects, and delivered whole', () => {
    const framer = new LineFramer();
    const lines: Buffer[] = [];
    const handler = { line: (l: Buffer) => lines.push(l), oversize: () => undefined };
    const count = 500_000;
    for (let i = 0; i < count; i++) framer.push(i % 2 ? Buffer.alloc(1, 97) : Buffer.from('a'), handler);
    expect(framer.pending.bytes).toBe(count);
    expect(framer.pending.parts).toBeLessThan(12);
    framer.push(Buffer.from('\n'), handler);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.equals(Buffer.concat([Buffer.alloc(count, 97), Buffer.from('\n')]))).toBe(true);
  });

  it('heap per pending byte stays small whatever the chunking', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const used = () => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const count = 400_000;
    const framer = new LineFramer();
    const handler = { line: () => undefined, oversize: () => undefined };
    const before = used();
    for (let i = 0; i < count; i++) framer.push(Buffer.from([0x61]), handler);
    const perByte = (used() - before) / count;
    expect(framer.pending.bytes).toBe(count);
    // Measured near 1-2 bytes per byte; one object per chunk was over 100.
    expect(perByte).toBeLessThan(8);
  });
});
