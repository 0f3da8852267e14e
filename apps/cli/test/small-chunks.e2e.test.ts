import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin, waitFor } from './helpers.js';

// A server can choose how its output is chunked. Every cap of the bridge counts bytes; a chunk
// kept as its own object costs hundreds of bytes, so a long line written one byte per write()
// bloated the bridge far past the line's size. Absolute RSS depends on the machine, so the test
// looks at growth: the bridge's peak RSS (VmHWM) at two line sizes, for one-byte writes and for
// the same line written at once (the control). What one-byte writes add per extra pending byte,
// beyond what the control adds, must stay small.
const SERVER = fileURLToPath(new URL('./fixtures/one-byte-server.mjs', import.meta.url));
const COUNTER = fileURLToPath(new URL('./fixtures/count-chunks.cjs', import.meta.url));
const HEAD = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"';
const SMALL = 200_000;
const LARGE = 800_000;
const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-chunks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function peakKiB(pid: number): number {
  const match = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1]);
}

interface Run {
  readonly peakKiB: number;
  /** Chunks the bridge's streams received: one byte, 2-16 bytes, larger. */
  readonly chunks: { one: number; upTo16: number; larger: number };
}

async function run(mode: 'bytes' | 'whole', count: number): Promise<Run> {
  const counts = join(dir, `${mode}-${count}.json`);
  const bridge = spawnBin(
    [
      'run',
      '--backend',
      'none',
      '--env',
      'ONE_BYTE_COUNT',
      '--env',
      'ONE_BYTE_MODE',
      '--',
      process.execPath,
      SERVER,
    ],
    {
      PATH: process.env.PATH ?? '',
      ONE_BYTE_COUNT: String(count),
      ONE_BYTE_MODE: mode,
      NODE_OPTIONS: `--require ${COUNTER}`,
      CHUNK_COUNT_FILE: counts,
    },
  );
  await waitFor(() => bridge.stdoutSoFar().includes(10), 240_000, 'the long line');
  const peak = peakKiB(bridge.child.pid as number);
  bridge.child.stdin.end();
  const result = await bridge.result;
  // Verbatim and whole, however it was chunked.
  expect(result.stdout.toString()).toBe(`${HEAD}${'a'.repeat(count)}"}}\n`);
  expect(result.code).toBe(0);
  return { peakKiB: peak, chunks: JSON.parse(readFileSync(counts, 'utf8')) as Run['chunks'] };
}

describe('a server writing one byte per write()', () => {
  // Measured after: -4 bytes per extra pending byte (735 000 of 800 000 chunks one byte long).
  // Before PendingBytes the bridge kept one object per chunk, over 100 bytes per byte; against that
  // bridge, on a loaded machine, the 800 000-write line did not even arrive within 240 s.
  it('costs the bridge no more per pending byte than the same line written at once', {
    timeout: 900_000,
  }, async () => {
    const whole = [await run('whole', SMALL), await run('whole', LARGE)] as const;
    const bytes = [await run('bytes', SMALL), await run('bytes', LARGE)] as const;
    // Control: the server's output really reached the bridge in small chunks (at most 4 bytes
    // each on average, where one object per chunk would cost 32 bytes per byte or more), and the
    // control's in large ones.
    for (const [i, r] of bytes.entries()) {
      const count = i === 0 ? SMALL : LARGE;
      const chunks = r.chunks.one + r.chunks.upTo16 + r.chunks.larger;
      expect(chunks, JSON.stringify(r.chunks)).toBeGreaterThan(count / 4);
    }
    for (const r of whole) expect(r.chunks.one, JSON.stringify(r.chunks)).toBeLessThan(1000);
    const perByte = (pair: readonly [Run, Run]) =>
      ((pair[1].peakKiB - pair[0].peakKiB) * 1024) / (LARGE - SMALL);
    const extra = perByte(bytes) - perByte(whole);
    console.log(
      `peak KiB whole ${whole.map((r) => r.peakKiB)} bytes ${bytes.map((r) => r.peakKiB)}; ` +
        `chunks ${bytes.map((r) => JSON.stringify(r.chunks))}; extra bytes per pending byte ${extra.toFixed(1)}`,
    );
    // 600 000 extra pending bytes: 32 bytes each is 19 MB, well above noise; one object per chunk
    // was over 100 each.
    expect(extra).toBeLessThan(32);
  });
});
