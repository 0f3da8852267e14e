import { PendingBytes } from '@mcpsandbox/core';

/** Connect's streaming framing: one flag byte, a 4-byte big-endian length, the payload. */
export const FLAG_COMPRESSED = 0x01;
export const FLAG_END_STREAM = 0x02;

/**
 * Yields the frames of a Connect stream. The declared length is checked against the cap before
 * anything of the frame is kept, so a header claiming 4 GiB costs five bytes. Network chunks can be
 * a byte each (a frame sent one byte per packet): they are merged as they wait, never kept one
 * object apiece, so an unfinished frame costs about its bytes.
 */
export async function* readFrames(
  reader: Pick<ReadableStreamDefaultReader<Uint8Array>, 'read'>,
  max: number,
  protocol: (why: string) => Error,
  /** Where the bytes of an unfinished frame wait (given by tests, to count what it holds). */
  pending = new PendingBytes(),
): AsyncGenerator<{ flags: number; payload: Uint8Array }> {
  let want = 5;
  let header: { flags: number; length: number } | undefined;
  for (;;) {
    while (pending.length >= want) {
      if (!header) {
        const head = pending.take(5);
        const flags = head.readUInt8(0);
        const length = head.readUInt32BE(1);
        if (flags & FLAG_COMPRESSED || flags & ~(FLAG_COMPRESSED | FLAG_END_STREAM)) {
          throw protocol(`envd sent a frame with flags ${flags}, which this client never asked for`);
        }
        if (length > max) {
          throw protocol(
            `envd sent a frame of ${length} bytes, over the cap of ${max} (the backend option maxFrameBytes)`,
          );
        }
        header = { flags, length };
        want = length;
        continue;
      }
      const payload = pending.take(header.length);
      const flags = header.flags;
      header = undefined;
      want = 5;
      yield { flags, payload };
      if (flags & FLAG_END_STREAM) return;
    }
    const next = await reader.read();
    if (next.done) {
      if (pending.length > 0 || header) throw protocol('envd ended the stream inside a frame');
      return;
    }
    pending.append(next.value);
  }
}
