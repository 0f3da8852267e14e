import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs fixture, shared with the servers that replay it
import { corpus, FLOOD_COUNT } from './fixtures/hostile-corpus.mjs';
import { line, spawnBin, traceRecords, waitFor } from './helpers.js';

// A hostile server replays a corpus of nasty lines (duplicate keys, lone surrogates, invalid
// UTF-8, `__proto__`, numbers past 2^53, 10^6-deep nesting, ids of every JSON type, responses to
// requests never sent, a server-to-client request flood) while the client's tools/list is
// pending. The bridge must not crash, and with `--deny-tool admin-*` nothing that carries the
// denied tool may reach the client, whatever its disguise. The same cases run against each
// server that plays the script (Node's, Python's).

export const corpusEntries = (corpus as () => Array<{ name: string; bytes: Buffer }>)();
const MARKER = Buffer.from('HOSTILE-');

function lines(stdout: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let nl = stdout.indexOf(10); nl >= 0; nl = stdout.indexOf(10, start)) {
    out.push(stdout.subarray(start, nl));
    start = nl + 1;
  }
  return out;
}

export interface HostileServer {
  /** Shown in the suite's title. */
  readonly name: string;
  /** `run` options before the policy's (backend, mounts, env). */
  readonly runArgs: readonly string[];
  /** The server's argv, after `--`. */
  readonly argv: readonly string[];
}

async function replay(server: HostileServer, policy: string[], trace?: string) {
  const run = spawnBin(
    [
      'run',
      ...server.runArgs,
      '--env',
      'HOSTILE_MODE=replay',
      ...policy,
      ...(trace ? ['--trace', trace] : []),
      '--',
      ...server.argv,
    ],
    { PATH: process.env.PATH ?? '' },
  );
  const send = (m: unknown) => run.child.stdin.write(line(m));
  send({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  // The server answers this after the whole corpus: once it is here, everything else is too.
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'greet', arguments: {} } });
  await waitFor(() => run.stdoutSoFar().includes('called greet'), 60_000, 'the answer to tools/call 2');
  run.child.stdin.end();
  const result = await run.result;
  return { ...result, lines: lines(result.stdout) };
}

/** Registers the two hostile-bytes cases (control, and under `--deny-tool`) for one server. */
export function hostileBytesCases(server: HostileServer): void {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-hostile-bytes-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  describe(`the hostile-bytes server (${server.name}) through mcp-sandbox run`, () => {
    it('without a policy: no crash, every JSON line verbatim, the rest diverted to stderr (control)', async () => {
      const { code, stderr, stdout, lines: out } = await replay(server, []);
      expect(code).toBe(0);
      expect(stderr).not.toMatch(/unexpected failure|bridge-crash/);
      const forwarded = new Set(out.map((l) => l.toString('latin1')));
      for (const entry of corpusEntries) {
        let json = false;
        try {
          json = typeof JSON.parse(entry.bytes.toString()) === 'object';
        } catch {}
        if (json) expect(forwarded.has(entry.bytes.toString('latin1')), entry.name).toBe(true);
        else expect(stderr, entry.name).toContain(`HOSTILE-${entry.name}`);
      }
      // The attack material reached the client side: the markers are on stdout.
      expect(stdout.includes(MARKER)).toBe(true);
      expect(out.filter((l) => l.includes('"method":"ping"'))).toHaveLength(FLOOD_COUNT);
    }, 90_000);

    it('with --deny-tool: no crash, and nothing carrying the denied tool reaches the client', async () => {
      const trace = join(dir, 'deny.jsonl');
      const { code, stderr, stdout, lines: out } = await replay(server, ['--deny-tool', 'admin-*'], trace);
      expect(code).toBe(0);
      expect(stderr).not.toMatch(/unexpected failure|bridge-crash/);
      expect(stdout.includes(MARKER)).toBe(false);
      expect(stdout.includes(Buffer.from('admin'))).toBe(false);
      // What does reach it is valid UTF-8 JSON, one reading only.
      for (const l of out)
        expect(() => JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(l))).not.toThrow();
      // Requests and notifications from the server are not the policy's business: the flood passes.
      expect(out.filter((l) => l.includes('"method":"ping"'))).toHaveLength(FLOOD_COUNT);
      // Request 1 got exactly one answer, and request 2 its own.
      const answers = out.map((l) => JSON.parse(l.toString())).filter((m) => m.id === 1 || m.id === 2);
      expect(answers.map((m) => m.id).sort()).toEqual([1, 2]);
      const records = traceRecords(trace);
      const dropped = records.filter((r) => r.type === 'policy' && r.action === 'dropped');
      expect(dropped.length).toBeGreaterThanOrEqual(corpusEntries.length - 4);
      expect(stderr).toContain('further drops are recorded only in the trace');
      // `mcp-sandbox trace` counts the drops by reason rather than listing thousands of lines.
      const summary = (await spawnBin(['trace', trace]).result).stdout.toString();
      expect(summary).toMatch(/policy: dropped \d+ server message\(s\): a response to a request never sent/);
      expect(summary).toMatch(/policy: dropped 2 server message\(s\): a duplicate key "id"/);
    }, 90_000);
  });
}
