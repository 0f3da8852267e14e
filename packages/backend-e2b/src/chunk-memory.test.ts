import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PendingBytes } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import { ByteQueue } from './byte-queue.js';
import { readFrames } from './frames.js';

// envd (root in the VM) chooses how its output is chunked: one-byte frames, or one frame sent a
// byte per packet. Each chunk kept as its own object cost hundreds of bytes of heap per byte.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** Heap and array buffers in use after a full collection. */
function used(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

const byteAt = (i: number) => (i * 7 + 3) % 251;
const protocol = (why: string) => new Error(why);

describe('ByteQueue memory per pending byte', () => {
  it('a million one-byte chunks wait in a handful of objects and come out whole, in order', async () => {
    const count = 1_000_000;
    const queue = new ByteQueue(2 * count);
    for (let i = 0; i < count; i++) void queue.push(Buffer.from([byteAt(i)]));
    expect(queue.pending).toEqual({ bytes: count, parts: expect.any(Number) });
    // 64 KiB merged buffers: about 16, where one object per chunk was a million.
    expect(queue.pending.parts).toBeLessThan(24);
    queue.end();
    const out: Buffer[] = [];
    for await (const chunk of queue) out.push(Buffer.from(chunk));
    const all = Buffer.concat(out);
    expect(all.length).toBe(count);
    let wrong = 0;
    for (let i = 0; i < count; i++) if (all[i] !== byteAt(i)) wrong++;
    expect(wrong).toBe(0);
  });

  it('heap per pending byte stays small with one-byte chunks (and the producer is held at the mark)', async () => {
    const count = 400_000;
    const queue = new ByteQueue(count);
    const before = used();
    for (let i = 0; i < count - 1; i++) void queue.push(Buffer.from([byteAt(i)]));
    let held = true;
    void queue.push(Buffer.from([byteAt(count - 1)])).then(() => {
      held = false;
    });
    const perByte = (used() - before) / count;
    expect(queue.pending.bytes).toBe(count);
    // Measured near 1-2 bytes per byte; one object per chunk was over 100.
    expect(perByte).toBeLessThan(8);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(held).toBe(true); // the last push reached the mark: it waits for the reader
  });

  it('a chunk read as soon as it comes is handed on as it is (no copy)', async () => {
    const queue = new ByteQueue(1024);
    const iterator = queue[Symbol.asyncIterator]();
    const chunk = Buffer.from('{"jsonrpc":"2.0"}\n');
    void queue.push(chunk);
    expect((await iterator.next()).value).toBe(chunk);
    const next = iterator.next();
    const second = Buffer.from('x');
    void queue.push(second);
    expect((await next).value).toBe(second);
  });
});

/** A stream reader that hands out `data` one byte per read, calling `at` before read `n`. */
function bytewise(
  data: Buffer,
  at: number,
  probe: () => void,
): Pick<ReadableStreamDefaultReader<Uint8Array>, 'read'> {
  let i = 0;
  return {
    read: async () => {
      if (i === at) probe();
      if (i >= data.length) return { done: true, value: undefined };
      return { done: false, value: Buffer.from([data[i++] as number]) };
    },
  };
}

function frame(payload: Buffer, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

describe('readFrames memory per pending byte', () => {
  const size = 600_000;
  const payload = Buffer.from(Array.from({ length: size }, (_, i) => byteAt(i)));

  it('a frame sent one byte per read waits in a handful of objects, and is read whole', async () => {
    const pending = new PendingBytes();
    const seen: { bytes: number; parts: number }[] = [];
    const reader = bytewise(Buffer.concat([frame(payload), frame(Buffer.from('{}'), 2)]), 5 + size - 1, () =>
      seen.push({ bytes: pending.length, parts: pending.parts }),
    );
    const frames: { flags: number; payload: Uint8Array }[] = [];
    for await (const f of readFrames(reader, 4 * 1024 * 1024, protocol, pending)) frames.push(f);
    // Control: the probe ran with the frame all but complete.
    expect(seen).toHaveLength(1);
    expect(seen[0]?.bytes).toBe(size - 1);
    expect(seen[0]?.parts).toBeLessThan(24);
    expect(frames.map((f) => f.flags)).toEqual([0, 2]);
    expect(Buffer.from(frames[0]?.payload ?? []).equals(payload)).toBe(true);
    expect(Buffer.from(frames[1]?.payload ?? []).toString()).toBe('{}');
  });

  it('heap per pending byte stays small', async () => {
    const count = 400_000;
    let perByte = Number.NaN;
    let pendingBytes = 0;
    const pending = new PendingBytes();
    const before = used();
    const reader = bytewise(frame(payload), 5 + count, () => {
      pendingBytes = pending.length;
      perByte = (used() - before) / count;
    });
    for await (const _ of readFrames(reader, 4 * 1024 * 1024, protocol, pending)) break;
    expect(pendingBytes).toBe(count);
    // Measured near 1-2 bytes per byte; one object per network chunk was over 100.
    expect(perByte).toBeLessThan(8);
  });
});
