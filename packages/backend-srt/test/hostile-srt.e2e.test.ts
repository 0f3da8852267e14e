import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs fixture of the CLI's, shared with the server that replays it
import { corpus, FLOOD_COUNT } from '../../../apps/cli/test/fixtures/hostile-corpus.mjs';
import { CLI_FIXTURES, FIXTURES, processesWithMarker, spawnBin, traceRecords, waitFor } from './cli.js';

// Hostile servers against `run --backend srt`, through the built binary: the hostile-bytes
// corpus (the bridge must not crash; a denied tool reaches the client in no disguise), and a
// server that leaves a daemon behind (double fork, setsid), which must not outlive the session.
const HOSTILE = join(CLI_FIXTURES, 'hostile-server.mjs');
const DAEMON = join(FIXTURES, 'daemon-server.mjs');
const dir = mkdtempSync(join(tmpdir(), 'srt-hostile-'));
// Anyone may pass: as root the sandbox runs as nobody, and only the sandbox may keep files out of reach.
chmodSync(dir, 0o755);
const home = join(dir, 'home');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home };
const entries = (corpus as () => Array<{ name: string; bytes: Buffer }>)();
const MARKER = Buffer.from('HOSTILE-');
const line = (message: unknown) => `${JSON.stringify(message)}\n`;
const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

function lines(stdout: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let nl = stdout.indexOf(10); nl >= 0; nl = stdout.indexOf(10, start)) {
    out.push(stdout.subarray(start, nl));
    start = nl + 1;
  }
  return out;
}

async function replay(policy: string[], trace: string) {
  const run = spawnBin(
    [
      'run',
      '--backend',
      'srt',
      '--env',
      'HOSTILE_MODE=replay',
      ...policy,
      '--trace',
      trace,
      '--',
      process.execPath,
      HOSTILE,
    ],
    env,
  );
  const send = (m: unknown) => run.child.stdin.write(line(m));
  send(initialize);
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'greet', arguments: {} } });
  await waitFor(() => run.stdoutSoFar().includes('called greet'), 90_000, 'the answer to tools/call 2');
  run.child.stdin.end();
  const result = await run.result;
  return { ...result, lines: lines(result.stdout) };
}

describe('the hostile-bytes server through run --backend srt', () => {
  it('without a policy: no crash, the corpus reached the client side (control)', async () => {
    const { code, stderr, stdout } = await replay([], join(dir, 'control.jsonl'));
    expect(code).toBe(0);
    expect(stderr).toContain('backend srt, isolation os');
    expect(stderr).not.toMatch(/unexpected failure|bridge-crash/);
    expect(stdout.includes(MARKER)).toBe(true);
  }, 120_000);

  it('with --deny-tool admin-*: no crash, nothing carrying the denied tool reaches the client', async () => {
    const trace = join(dir, 'deny.jsonl');
    const { code, stderr, stdout, lines: out } = await replay(['--deny-tool', 'admin-*'], trace);
    expect(code).toBe(0);
    expect(stderr).not.toMatch(/unexpected failure|bridge-crash/);
    expect(stdout.includes(MARKER)).toBe(false);
    expect(stdout.includes(Buffer.from('admin'))).toBe(false);
    for (const l of out)
      expect(() => JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(l))).not.toThrow();
    expect(out.filter((l) => l.includes('"method":"ping"'))).toHaveLength(FLOOD_COUNT);
    const answers = out.map((l) => JSON.parse(l.toString())).filter((m) => m.id === 1 || m.id === 2);
    expect(answers.map((m) => m.id).sort()).toEqual([1, 2]);
    const dropped = traceRecords(trace).filter((r) => r.type === 'policy' && r.action === 'dropped');
    expect(dropped.length).toBeGreaterThanOrEqual(entries.length - 4);
  }, 120_000);
});

describe('a server that leaves a daemon (double fork, setsid) under run --backend srt', () => {
  async function daemonSession(ttl: string) {
    const marker = `srt-daemon-${randomUUID()}`;
    const run = spawnBin(
      [
        'run',
        '--backend',
        'srt',
        '--ttl',
        ttl,
        '--env',
        `DAEMON_MARKER=${marker}`,
        '--',
        process.execPath,
        DAEMON,
      ],
      env,
    );
    run.child.stdin.write(line(initialize));
    await waitFor(() => run.stdoutSoFar().includes('"id":0'), 60_000, 'the answer to initialize');
    await waitFor(() => run.stderrSoFar().includes('daemon started'), 10_000, 'the daemon');
    // Control: the daemon really runs, outside the server's process group, as long as the session.
    await waitFor(() => processesWithMarker(marker).length >= 2, 10_000, 'the daemon and the server');
    return { run, marker };
  }

  it('does not survive the TTL', async () => {
    const { run, marker } = await daemonSession('8s');
    const result = await run.result;
    expect(result.stderr).toMatch(/ttl|lifetime/i);
    await waitFor(() => processesWithMarker(marker).length === 0, 5_000, 'every process of the session gone');
  }, 90_000);

  it("does not survive the client's EOF", async () => {
    const { run, marker } = await daemonSession('10m');
    run.child.stdin.end();
    await run.result;
    await waitFor(() => processesWithMarker(marker).length === 0, 5_000, 'every process of the session gone');
  }, 90_000);
});
