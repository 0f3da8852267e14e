import { describe, expect, it } from 'vitest';
import { ByteChannel } from './channel.js';

const bytes = (...values: number[]) => new Uint8Array(values);

async function drain(channel: ByteChannel): Promise<number[]> {
  const out: number[] = [];
  for await (const chunk of channel) out.push(...chunk);
  return out;
}

describe('ByteChannel', () => {
  it('keeps chunks in order and whole, then ends after pending writes', async () => {
    const channel = new ByteChannel({ highWaterMark: 2 });
    const writes = [channel.write(bytes(1, 2)), channel.write(bytes(3)), channel.write(bytes(4, 5, 6))];
    channel.end();
    const first = await channel.read();
    expect(first).toEqual({ done: false, value: bytes(1, 2) });
    expect(await drain(channel)).toEqual([3, 4, 5, 6]);
    await Promise.all(writes);
  });

  it('accepts while under the high-water mark and holds writes beyond it', async () => {
    const channel = new ByteChannel({ highWaterMark: 4 });
    let accepted = 0;
    for (let i = 0; i < 10; i++) void channel.write(bytes(i, i)).then(() => accepted++);
    await new Promise((resolve) => setImmediate(resolve));
    expect(accepted).toBe(2);
    expect(channel.buffered).toBe(4);
    await channel.read();
    await new Promise((resolve) => setImmediate(resolve));
    expect(accepted).toBe(3);
    expect(channel.buffered).toBe(4);
  });

  it('abortWrites fails pending and later writes but keeps what was accepted', async () => {
    const channel = new ByteChannel({ highWaterMark: 1 });
    await channel.write(bytes(1));
    const pending = channel.write(bytes(2));
    const error = new Error('dead');
    channel.abortWrites(error);
    await expect(pending).rejects.toBe(error);
    await expect(channel.write(bytes(3))).rejects.toBe(error);
    expect(await drain(channel)).toEqual([1]);
  });

  it('abortReads fails waiting and later reads', async () => {
    const channel = new ByteChannel();
    const waiting = channel.read();
    const error = new Error('gone');
    channel.abortReads(error);
    await expect(waiting).rejects.toBe(error);
    await expect(channel.read()).rejects.toBe(error);
    await expect(channel.write(bytes(1))).rejects.toBe(error);
  });

  it('leaving a for-await loop cancels: writes fail with the cancel error, reads see EOF', async () => {
    const channel = new ByteChannel({ cancelError: () => new Error('EPIPE here') });
    await channel.write(bytes(1));
    await channel.write(bytes(2));
    for await (const _chunk of channel) break;
    await expect(channel.write(bytes(3))).rejects.toThrow('EPIPE here');
    expect(await channel.read()).toEqual({ done: true, value: undefined });
  });

  it('refuses writes after end', async () => {
    const channel = new ByteChannel();
    channel.end();
    await expect(channel.write(bytes(1))).rejects.toThrow('write after end');
    expect(await channel.read()).toEqual({ done: true, value: undefined });
  });
});
