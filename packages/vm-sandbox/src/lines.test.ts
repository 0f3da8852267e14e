import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { LineSplitter } from './lines.js';

describe('LineSplitter', () => {
  it('joins lines across chunks, with a UTF-8 character split between them', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter(100);
    const bytes = Buffer.from('a\nbé\n\nlast');
    for (let i = 0; i < bytes.length; i++) splitter.push(bytes.subarray(i, i + 1), (l) => lines.push(l));
    splitter.push(Buffer.from('\n'), (l) => lines.push(l));
    expect(lines).toEqual(['a', 'bé', '', 'last']);
  });

  it('says when an unfinished line passes the cap', () => {
    const splitter = new LineSplitter(4);
    expect(splitter.push(Buffer.from('12'), () => undefined)).toBe(true);
    expect(splitter.push(Buffer.from('345'), () => undefined)).toBe(false);
  });
});

describe('LineSplitter memory per pending byte', () => {
  // The child's stdout can come a byte per chunk: each chunk kept as its own object until the
  // newline cost hundreds of bytes of host heap per byte of the line.
  it('a line fed one byte per chunk waits in a handful of objects, and is delivered whole', () => {
    const count = 500_000;
    const splitter = new LineSplitter(2 * count);
    const lines: string[] = [];
    for (let i = 0; i < count; i++) splitter.push(Buffer.from([0x61 + (i % 26)]), (l) => lines.push(l));
    expect(splitter.pending.bytes).toBe(count);
    expect(splitter.pending.parts).toBeLessThan(24);
    expect(splitter.push(Buffer.from('\n'), (l) => lines.push(l))).toBe(true);
    expect(lines).toHaveLength(1);
    const expected = Array.from({ length: count }, (_, i) => String.fromCharCode(0x61 + (i % 26))).join('');
    expect(lines[0] === expected).toBe(true);
    expect(splitter.pending).toEqual({ bytes: 0, parts: 0 });
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
    const splitter = new LineSplitter(2 * count);
    const before = used();
    for (let i = 0; i < count; i++) splitter.push(Buffer.from([0x61]), () => undefined);
    const perByte = (used() - before) / count;
    expect(splitter.pending.bytes).toBe(count);
    // Measured near 1-2 bytes per byte; one object per chunk was over 100.
    expect(perByte).toBeLessThan(8);
  });

  it('a line that arrives in one chunk is decoded from that chunk (nothing held)', () => {
    const splitter = new LineSplitter(100);
    const lines: string[] = [];
    splitter.push(Buffer.from('{"t":"x"}\n{"t":'), (l) => lines.push(l));
    expect(lines).toEqual(['{"t":"x"}']);
    expect(splitter.pending).toEqual({ bytes: 5, parts: 1 });
  });
});
