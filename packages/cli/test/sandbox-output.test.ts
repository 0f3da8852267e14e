import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { sandboxOutput } from '../src/sandbox-output.js';

async function through(chunks: Array<string | Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      parts.push(chunk);
      done();
    },
  });
  const out = sandboxOutput(sink);
  for (const chunk of chunks) out.write(chunk);
  await new Promise<void>((resolve) => out.end(resolve));
  return Buffer.concat(parts).toString('utf8');
}

describe('sandboxOutput: the sandbox lines on stderr', () => {
  it('prefixes every line, whatever the chunking', async () => {
    expect(await through(['one\ntw', 'o\n', 'three'])).toBe('[sandbox] one\n[sandbox] two\n[sandbox] three');
  });

  it('shows control characters instead of letting them move the cursor, CRLF is a line end', async () => {
    expect(await through(['a\r', '\nb\rmcp-sandbox: error: x\u001b[2K\u0007\n'])).toBe(
      '[sandbox] a\n[sandbox] b\\rmcp-sandbox: error: x\\x1b[2K\\x07\n',
    );
  });

  it('escapes C1 controls (a one-character CSI) even split across chunks; other UTF-8 passes intact', async () => {
    const csi = Buffer.from('\u009b2K', 'utf8');
    const text = Buffer.from('é→ok\n', 'utf8');
    expect(await through([csi.subarray(0, 1), csi.subarray(1), text.subarray(0, 1), text.subarray(1)])).toBe(
      '[sandbox] \\u009b2Ké→ok\n',
    );
  });
});
