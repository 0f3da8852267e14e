/**
 * The process-wide safety net: whatever throws in the host process, the sandbox is closed, the trace
 * says why, requests in flight are answered and the exit code is 125. The fault comes from a real
 * extension point: a backend module with a bug, loaded with --backend, that throws (or drops a
 * rejected promise) when the sandboxed server prints a marker. Nothing is killed by hand.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { line, processesWithMarker, spawnBin, stdoutMessages, traceRecords, waitFor } from './helpers.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const NET_SERVER = fileURLToPath(new URL('./fixtures/net-server.mjs', import.meta.url));
const FAULTY = fileURLToPath(new URL('./fixtures/faulty-backend.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-crash-'));
// As root the sandbox runs as nobody, who must reach its state directory.
chmodSync(dir, 0o755);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Live processes whose command line mentions `text` (bwrap's carries the state directory). */
function processesWithArgument(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`).includes(text)) continue;
      if (!/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${entry}/stat`, 'utf8'))) found.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

const call = (id: number, name: string, args: Record<string, unknown> = {}) =>
  line({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

describe('an uncaught fault in the host process', () => {
  // Fails before the safety net: Node printed the stack and exited 1 with both requests unanswered,
  // no trace record and the state directory left behind.
  it.each(['uncaught', 'rejection'])(
    '(%s) closes the sandbox, answers in-flight requests with -32000, traces bridge-crash, exits 125',
    async (kind) => {
      const marker = `crash-marker-${randomUUID()}`;
      const stateDir = mkdtempSync(join(dir, 'state-'));
      chmodSync(stateDir, 0o755);
      const trace = join(dir, `${kind}.jsonl`);
      const bin = spawnBin(
        [
          'run',
          '--backend',
          FAULTY,
          '--backend-option',
          `stateDir=${stateDir}`,
          '--mount',
          `${REPO}:ro`,
          '--env',
          `CRASH_MARKER=${marker}`,
          '--trace',
          trace,
          '--',
          'node',
          NET_SERVER,
        ],
        { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
      );
      bin.child.stdin.write(call(1, 'hang'));
      // Control: the sandbox's processes are visible to these checks while the session runs.
      await waitFor(() => processesWithMarker(marker).length > 0, 20_000, 'the sandboxed server');
      expect(processesWithArgument(stateDir).length).toBeGreaterThan(0);
      bin.child.stdin.write(call(2, 'stderr', { text: `FAULT:${kind}` }));
      const result = await bin.result;

      expect(result.code).toBe(125);
      const answers = stdoutMessages(result.stdout);
      for (const id of [1, 2]) {
        expect(answers).toContainEqual(
          expect.objectContaining({ id, error: expect.objectContaining({ code: -32000 }) }),
        );
      }
      const records = traceRecords(trace);
      expect(records).toContainEqual(
        expect.objectContaining({ type: 'bridge-crash', message: expect.stringContaining('faulty backend') }),
      );
      expect(records).toContainEqual(expect.objectContaining({ type: 'sandbox-closed' }));
      expect(records.at(-1)).toMatchObject({ type: 'session-end', reason: 'bridge-crash', exitCode: 125 });
      expect(result.stderr).toContain('faulty backend');
      expect(result.stderr).not.toMatch(/^\s+at /m);
      // Nothing of the sandbox is left: no process, no state directory.
      expect(processesWithMarker(marker)).toEqual([]);
      expect(processesWithArgument(stateDir)).toEqual([]);
      expect(readdirSync(stateDir)).toEqual([]);
    },
  );
});
