import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnBin, waitFor } from './helpers.js';

// A server can choose how its output is chunked. Every cap of the bridge counts bytes; a chunk
// kept as its own object costs hundreds of bytes, so a long line written one byte per write()
// bloated the bridge far past the line's size. The bridge's peak RSS (VmHWM) with one-byte
// writes is compared with the same line written at once.
const SERVER = fileURLToPath(new URL('./fixtures/one-byte-server.mjs', import.meta.url));
const COUNT = 300_000;
const HEAD = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"';
const EXPECTED = `${HEAD}${'a'.repeat(COUNT)}"}}\n`;

function peakMiB(pid: number): number {
  const match = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(match?.[1]) / 1024);
}

async function run(mode: 'bytes' | 'whole'): Promise<number> {
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
    { PATH: process.env.PATH ?? '', ONE_BYTE_COUNT: String(COUNT), ONE_BYTE_MODE: mode },
  );
  await waitFor(() => bridge.stdoutSoFar().includes(10), 60_000, 'the long line');
  const peak = peakMiB(bridge.child.pid as number);
  bridge.child.stdin.end();
  const result = await bridge.result;
  // Verbatim and whole, however it was chunked.
  expect(result.stdout.toString()).toBe(EXPECTED);
  expect(result.code).toBe(0);
  return peak;
}

describe('a server writing one byte per write()', () => {
  // Before PendingBytes, 300 000 one-byte writes peaked 36 MiB above the control (98 vs 62) when
  // the bridge kept up with the writes; on a loaded machine the pipe merges writes and it may not.
  it('costs the bridge about what the same line written at once does', { timeout: 120_000 }, async () => {
    const whole = await run('whole');
    const bytes = await run('bytes');
    expect(bytes - whole).toBeLessThan(16);
  });
});
