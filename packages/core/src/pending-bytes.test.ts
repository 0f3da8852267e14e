import { describe, expect, it } from 'vitest';
import { rng } from '../test/rng.js';
import { MERGE_BELOW_BYTES, PendingBytes } from './pending-bytes.js';

function chunks(data: Buffer, random: () => number, maxChunk: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; ) {
    const size = 1 + Math.floor(random() * maxChunk);
    out.push(data.subarray(i, i + size));
    i += size;
  }
  return out;
}

describe('PendingBytes', () => {
  it('gives back exactly the bytes it was fed, in order, under seeded random chunkings and takes', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const random = rng(seed);
      const data = Buffer.from(
        Array.from({ length: 1 + Math.floor(random() * 60_000) }, () => random() * 256),
      );
      const maxChunk = [4, 300, 40_000][seed % 3] as number;
      const pending = new PendingBytes();
      const out: Buffer[] = [];
      const taken = () => out.reduce((n, b) => n + b.length, 0);
      for (const chunk of chunks(data, random, maxChunk)) {
        pending.append(chunk);
        const r = random();
        if (r < 0.1) out.push(Buffer.from(pending.take(Math.floor(random() * (pending.length + 1)))));
        else if (r < 0.15) out.push(Buffer.from(pending.shift() ?? Buffer.alloc(0)));
        else if (r < 0.2) {
          const at = taken();
          expect(pending.head(100).equals(data.subarray(at, Math.min(at + 100, at + pending.length)))).toBe(
            true,
          );
        }
      }
      out.push(pending.takeAll());
      expect(Buffer.concat(out).equals(data), `seed ${seed}`).toBe(true);
      expect(pending.length).toBe(0);
    }
  });

  it('head is a copy of the first bytes and leaves the bytes where they were', () => {
    const pending = new PendingBytes();
    for (const c of 'hello, world') pending.append(Buffer.from(c));
    expect(pending.head(5).toString()).toBe('hello');
    expect(pending.head(100).toString()).toBe('hello, world');
    expect(pending.takeAll(Buffer.from('!')).toString()).toBe('hello, world!');
  });

  it('holds a million one-byte chunks in a handful of objects', () => {
    const pending = new PendingBytes();
    for (let i = 0; i < 1_000_000; i++) pending.append(Buffer.alloc(1, 97));
    expect(pending.length).toBe(1_000_000);
    // 64 KiB shared buffers: about 16, where one object per chunk would be a million.
    expect(pending.parts).toBeLessThan(20);
    const all = pending.takeAll();
    expect(all.length).toBe(1_000_000);
    expect(all.every((b) => b === 97)).toBe(true);
  });

  it('keeps a large chunk as a view, but copies a small view that would pin a large buffer', () => {
    const big = Buffer.alloc(8 * MERGE_BELOW_BYTES, 1);
    const pending = new PendingBytes();
    pending.append(big);
    expect(pending.shift()?.buffer).toBe(big.buffer);
    pending.append(big.subarray(0, 10));
    const kept = pending.shift() as Buffer;
    expect(kept.buffer).not.toBe(big.buffer);
    expect(kept.buffer.byteLength).toBe(10);
  });
});
