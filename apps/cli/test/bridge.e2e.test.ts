import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FAKE_SERVER,
  line,
  processesWithMarker,
  spawnBin,
  stdoutMessages,
  traceRecords,
  waitFor,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-e2e-'));
const FIXTURES = fileURLToPath(new URL('./fixtures', import.meta.url));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const INIT = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const call = (id: number | string, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

/** Starts `mcp-sandbox run --backend none` on the fake server with a trace and a process marker. */
function session(serverFlags: string[], runFlags: string[] = []) {
  const marker = randomUUID();
  const trace = join(dir, `${marker}.jsonl`);
  const run = spawnBin([
    'run',
    '--backend',
    'none',
    '--trace',
    trace,
    '--env',
    `MCPSANDBOX_TEST_MARKER=${marker}`,
    ...runFlags,
    '--',
    process.execPath,
    FAKE_SERVER,
    ...serverFlags,
  ]);
  const send = (message: unknown) =>
    run.child.stdin.write(typeof message === 'string' ? message : line(message));
  const messages = () => stdoutMessages(run.stdoutSoFar());
  const answered = (id: unknown) => messages().some((m) => m.id === id);
  return { ...run, marker, trace, send, messages, answered };
}

/** What must hold after every exit path: one close, a complete trace, nothing left running. */
async function expectCleanEnd(s: ReturnType<typeof session>) {
  const result = await s.result;
  const records = traceRecords(s.trace);
  expect(records.filter((r) => r.type === 'sandbox-closed')).toHaveLength(1);
  expect(records.at(-1)?.type).toBe('session-end');
  await waitFor(() => processesWithMarker(s.marker).length === 0, 5_000, 'no process left behind');
  expect(result.stderr).not.toMatch(/\n\s+at .+\(.+:\d+:\d+\)/);
  return { result, records };
}

describe('mcp-sandbox run: the bridge promises, with real processes', () => {
  it('answers a request still pending when the client closes stdin', async () => {
    const s = session([]);
    s.send(INIT);
    s.send(call(1, 'slow', { ms: 1500 }));
    s.child.stdin.end();
    const { result, records } = await expectCleanEnd(s);
    expect(result.code).toBe(0);
    const reply = stdoutMessages(result.stdout).find((m) => m.id === 1);
    expect(reply?.result).toBeDefined();
    expect(records.find((r) => r.type === 'session-end')).toMatchObject({
      reason: 'client-eof',
      exitCode: 0,
    });
  });

  it('kills a server that ignores EOF and SIGTERM after the grace periods', async () => {
    const s = session(['--ignore-eof', '--ignore-sigterm'], ['--kill-grace', '700ms']);
    s.send(INIT);
    await waitFor(() => s.answered(0));
    const closedAt = Date.now();
    s.child.stdin.end();
    const { result, records } = await expectCleanEnd(s);
    expect(result.code).toBe(0);
    expect(Date.now() - closedAt).toBeGreaterThanOrEqual(1_000);
    expect(records.some((r) => r.type === 'kill' && r.signal === 'SIGKILL')).toBe(true);
    expect(records.find((r) => r.type === 'process-exit')).toMatchObject({ signal: 'SIGKILL' });
  });

  it('answers requests in flight with errors when the server crashes, and exits with its code', async () => {
    const s = session(['--exit-after', '1', '--exit-code', '3']);
    s.send(INIT);
    s.send(call(1, 'slow', { ms: 5000 }));
    const { result } = await expectCleanEnd(s);
    expect(result.code).toBe(3);
    const reply = stdoutMessages(result.stdout).find((m) => m.id === 1);
    expect(reply?.error).toMatchObject({
      code: -32000,
      message: expect.stringContaining('exited with code 3'),
    });
  });

  it('fires the TTL mid-request: an error for the request, exit code 124', async () => {
    const s = session([], ['--ttl', '1500ms']);
    s.send(INIT);
    s.send(call(1, 'slow', { ms: 30_000 }));
    const { result, records } = await expectCleanEnd(s);
    expect(result.code).toBe(124);
    const reply = stdoutMessages(result.stdout).find((m) => m.id === 1);
    expect(reply?.error).toMatchObject({ code: -32002 });
    expect(records.some((r) => r.type === 'ttl-expired')).toBe(true);
    expect(result.stderr).toContain('TTL');
  });

  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    it(`stops on ${signal}: errors for requests in flight, exit 128+N, sandbox closed once`, async () => {
      const s = session([]);
      s.send(INIT);
      s.send(call(1, 'slow', { ms: 30_000 }));
      await waitFor(() => s.answered(0));
      s.child.kill(signal);
      const { result } = await expectCleanEnd(s);
      const numbers = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };
      expect(result.code).toBe(128 + numbers[signal]);
      expect(stdoutMessages(result.stdout).find((m) => m.id === 1)?.error).toMatchObject({ code: -32000 });
    });
  }

  it('survives the client closing its end of stdout: no EPIPE crash, nothing left running', async () => {
    const s = session([]);
    s.send(INIT);
    await waitFor(() => s.answered(0));
    s.child.stdout.destroy();
    // The bridge ends the session once its stdout is gone, so these writes may meet a closed pipe:
    // that EPIPE is the test's, not the bridge's.
    s.child.stdin.on('error', () => {});
    for (let i = 1; i <= 50; i++) s.send(call(i, 'echo', { text: 'x'.repeat(10_000) }));
    const { result } = await expectCleanEnd(s);
    expect(result.stderr).not.toMatch(/EPIPE|Unhandled|ERR_STREAM/);
    expect(result.code).toBe(0);
  });

  it('delivers messages sent before the server is up, in order (slow start)', async () => {
    const s = session(['--start-delay', '1000']);
    s.send(INIT);
    for (let i = 1; i <= 20; i++) s.send(call(i, 'add', { a: i, b: 1 }));
    await waitFor(() => s.answered(20));
    s.child.stdin.end();
    const { result } = await expectCleanEnd(s);
    const ids = stdoutMessages(result.stdout).map((m) => m.id);
    expect(ids).toEqual(Array.from({ length: 21 }, (_, i) => i));
  });

  it('diverts non-JSON stdout to stderr and the trace, never to the client', async () => {
    const s = session(['--noise']);
    s.send(INIT);
    s.send(call(1, 'echo', { text: 'hello' }));
    await waitFor(() => s.answered(1));
    s.child.stdin.end();
    const { result, records } = await expectCleanEnd(s);
    // Every line the client got parses as a JSON-RPC object.
    for (const m of stdoutMessages(result.stdout)) expect(m.jsonrpc).toBe('2.0');
    expect(result.stderr).toContain('[server stdout, not JSON-RPC]');
    expect(records.some((r) => r.type === 'stdout-diverted')).toBe(true);
  });

  it('reassembles a server that dribbles byte by byte, with CRLF endings', async () => {
    const s = session(['--dribble', '--crlf']);
    s.send(INIT);
    s.send(call(1, 'echo', { text: 'grüße €𝄞' }));
    await waitFor(() => s.answered(1), 20_000);
    s.child.stdin.end();
    const { result } = await expectCleanEnd(s);
    const reply = stdoutMessages(result.stdout).find((m) => m.id === 1) as {
      result: { content: Array<{ text: string }> };
    };
    expect(JSON.stringify(reply.result)).toContain('grüße €𝄞');
  });

  it('keeps an id past 2^53 byte for byte', async () => {
    const s = session([]);
    s.send(INIT);
    s.send(
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}\n',
    );
    await waitFor(() => s.stdoutSoFar().includes('"id":9007199254740993'));
    s.child.stdin.end();
    const { result } = await expectCleanEnd(s);
    expect(result.stdout.toString()).toMatch(/"id":9007199254740993[,}]/);
    const traceText = readFileSync(s.trace, 'utf8');
    expect(traceText).toMatch(/"id":9007199254740993[,}]/);
    expect(traceText).not.toContain('9007199254740992');
  });

  it('carries 20 MB messages both ways', async () => {
    const size = 20_000_000;
    const s = session([]);
    s.send(INIT);
    s.send(call(1, 'echo', { text: 'a'.repeat(size) }));
    s.send(call(2, 'big', { bytes: size }));
    await waitFor(() => s.answered(1) && s.answered(2), 60_000);
    s.child.stdin.end();
    const { result } = await expectCleanEnd(s);
    const lines = result.stdout.toString().split('\n').filter(Boolean);
    expect(lines.find((l) => l.includes('"id":1'))?.length).toBeGreaterThan(size);
    expect(lines.find((l) => l.includes('"id":2'))?.length).toBeGreaterThan(size);
  }, 90_000);

  it('refuses a message over --max-message-size with an error, then carries on', async () => {
    const s = session([], ['--max-message-size', '64KiB']);
    s.send(INIT);
    s.send(call(1, 'echo', { text: 'b'.repeat(100_000) }));
    s.send(call(2, 'echo', { text: 'small' }));
    await waitFor(() => s.answered(1) && s.answered(2));
    s.child.stdin.end();
    const { result, records } = await expectCleanEnd(s);
    const messages = stdoutMessages(result.stdout);
    expect(messages.find((m) => m.id === 1)?.error).toMatchObject({ code: -32001 });
    expect(messages.find((m) => m.id === 2)?.result).toBeDefined();
    expect(records.some((r) => r.type === 'oversize')).toBe(true);
  });

  it("propagates the server's exit code, and 127 for a missing command", async () => {
    const exit7 = spawnBin(['run', '--backend', 'none', '--', process.execPath, '-e', 'process.exit(7)']);
    exit7.child.stdin.end();
    expect((await exit7.result).code).toBe(7);
    const missing = spawnBin(['run', '--backend', 'none', '--', 'no-such-command-mcp-sandbox']);
    const result = await missing.result;
    expect(result.code).toBe(127);
    expect(result.stderr).toContain('command not found: no-such-command-mcp-sandbox');
  });

  it('a client that closes stdin before the sandbox is up still gets the server started, its last stderr and its exit code', async () => {
    // A mount makes the start slower than the client's EOF; the server must meet that EOF itself.
    const run = spawnBin([
      'run',
      '--backend',
      'local',
      '--mount',
      `${FIXTURES}:/fixtures:ro`,
      '--',
      'sh',
      '-c',
      'sleep 0.3; echo "the server saw EOF" >&2; exit 3',
    ]);
    run.child.stdin.end();
    const result = await run.result;
    expect(result.stderr).toContain('the server saw EOF');
    expect(result.code).toBe(3);
  }, 60_000);
});

describe('mcp-sandbox run: usage errors', () => {
  const cases: Array<[string, string[], RegExp]> = [
    [
      'a missing --env variable',
      ['--env', 'SURELY_NOT_SET_MCPSANDBOX'],
      /SURELY_NOT_SET_MCPSANDBOX is not set here/,
    ],
    ['an unknown backend', ['--backend', 'nope'], /no such backend/],
    ['a bad TTL', ['--ttl', 'soon'], /--ttl "soon"/],
    [
      'a custom backend module of the wrong version',
      ['--backend', './test/fixtures/old-backend.mjs'],
      /sandbox-backend-v0/,
    ],
    ['a bad --allow-net', ['--allow-net', 'http://x'], /--allow-net/],
  ];
  for (const [what, flags, message] of cases) {
    it(`exits 2 with one clear line for ${what}`, async () => {
      const run = spawnBin(['run', ...flags, '--', 'node', '-e', '']);
      const result = await run.result;
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stdout.length).toBe(0);
    });
  }

  it('exits 2 when no command is given', async () => {
    const result = await spawnBin(['run']).result;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing required argument 'command'");
  });
});
