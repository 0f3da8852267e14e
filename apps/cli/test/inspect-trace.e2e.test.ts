import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EVERYTHING, FAKE_SERVER, line, spawnBin, stdoutMessages, waitFor } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-inspect-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('mcp-sandbox inspect', () => {
  it('reports server-everything on `none`: name, protocol, exactly 13 tools, resources and prompts', async () => {
    const run = spawnBin(['inspect', '--backend', 'none', '--json', '--', process.execPath, EVERYTHING]);
    const result = await run.result;
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout.toString());
    expect(report.server.name).toBe('mcp-servers/everything');
    expect(report.protocolVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(report.tools).toHaveLength(13);
    expect(report.tools.find((t: { name: string }) => t.name === 'get-sum').required).toEqual(['a', 'b']);
    expect(report.prompts.length).toBeGreaterThan(0);
    expect(report.isolation).toBe('none');
  });

  it('prints readable tables, and applies the tool policy like run', async () => {
    const run = spawnBin([
      'inspect',
      '--backend',
      'none',
      '--deny-tool',
      'get-*',
      '--',
      process.execPath,
      EVERYTHING,
    ]);
    const result = await run.result;
    expect(result.code).toBe(0);
    const text = result.stdout.toString();
    expect(text).toMatch(/^mcp-servers\/everything .* · protocol /);
    expect(text).toContain('tools (6)');
    expect(text).not.toContain('get-env');
  });

  it('fails with the bridge exit code and one line when the server cannot start', async () => {
    const result = await spawnBin(['inspect', '--backend', 'none', '--', 'no-such-server-mcp-sandbox'])
      .result;
    expect(result.code).toBe(127);
    expect(result.stderr).toContain('could not inspect the server');
    expect(result.stdout.length).toBe(0);
  });

  // Before, `inspect -- cat` printed "Method not found" and exited 125, the code for a sandbox failure.
  it('says a program that echoes is not an MCP server, with exit 1, in the real OS sandbox', async () => {
    const result = await spawnBin(['inspect', '--', 'cat']).result;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('this program did not answer as an MCP server');
    expect(result.stdout.length).toBe(0);
  });

  it('gives up on a silent program after --timeout, with exit 1 and the flag named', async () => {
    const started = Date.now();
    const result = await spawnBin(['inspect', '--timeout', '1s', '--', 'sleep', '60']).result;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no answer to initialize within 1s (--timeout)');
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('refuses a malformed --timeout before starting anything', async () => {
    const result = await spawnBin(['inspect', '--timeout', 'soon', '--', 'cat']).result;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--timeout "soon"');
  });
});

describe('mcp-sandbox trace', () => {
  const trace = join(dir, 'session.jsonl');

  it('summarizes a trace written by run: messages, methods, tool latencies, errors, diverted lines, the end', async () => {
    const run = spawnBin([
      'run',
      '--backend',
      'none',
      '--trace',
      trace,
      '--',
      process.execPath,
      FAKE_SERVER,
      '--noise',
    ]);
    const send = (m: unknown) => run.child.stdin.write(line(m));
    send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    for (let i = 1; i <= 5; i++)
      send({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: `m${i}` } },
      });
    send({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'slow', arguments: { ms: 50 } } });
    send({ jsonrpc: '2.0', id: 7, method: 'no/such/method' });
    await waitFor(() => stdoutMessages(run.stdoutSoFar()).some((m) => m.id === 7));
    run.child.stdin.end();
    expect((await run.result).code).toBe(0);

    const json = await spawnBin(['trace', '--json', trace]).result;
    expect(json.code).toBe(0);
    const summary = JSON.parse(json.stdout.toString());
    expect(summary.sessions).toHaveLength(1);
    const s = summary.sessions[0];
    expect(s.backend).toBe('none');
    expect(s.messages.clientToServer).toBe(8);
    expect(s.methods['tools/call']).toBe(6);
    expect(s.tools.echo.calls).toBe(5);
    expect(s.tools.slow.p50Ms).toBeGreaterThanOrEqual(45);
    expect(s.errors).toBe(1);
    expect(s.diverted).toBeGreaterThan(0);
    expect(s.end).toMatchObject({ reason: 'client-eof', exitCode: 0 });

    const text = await spawnBin(['trace', trace]).result;
    expect(text.stdout.toString()).toMatch(/tools:\n\s+name\s+calls\s+errors\s+p50 ms/);
    expect(text.stdout.toString()).toContain('ended: client-eof, exit 0');
  });

  it('reads a trace cut mid-line and one with records of a newer version, with a note', async () => {
    const cut = join(dir, 'cut.jsonl');
    const full = readFileSync(trace, 'utf8');
    writeFileSync(cut, full.slice(0, full.length - 40));
    appendFileSync(cut, '');
    const result = await spawnBin(['trace', cut]).result;
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toContain('the last line is cut short');

    const newer = join(dir, 'newer.jsonl');
    writeFileSync(newer, `${full}{"v":2,"ts":"2030-01-01T00:00:00.000Z","seq":999,"type":"quantum"}\n`);
    const newerResult = await spawnBin(['trace', newer]).result;
    expect(newerResult.stdout.toString()).toContain('skipped 1 record(s) of a newer trace version');
  });

  it('refuses a file that is not a trace, with exit code 2', async () => {
    const junk = join(dir, 'junk.txt');
    writeFileSync(junk, 'hello\nworld\n');
    const result = await spawnBin(['trace', junk]).result;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('is not an mcp-sandbox trace');
  });

  it('follows a trace as it is written, one line per message with latency', async () => {
    const live = join(dir, `${randomUUID()}.jsonl`);
    writeFileSync(live, '');
    const follower = spawnBin(['trace', '--follow', live]);
    const run = spawnBin(['run', '--backend', 'none', '--trace', live, '--', process.execPath, FAKE_SERVER]);
    run.child.stdin.write(
      line({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'add', arguments: { a: 1, b: 2 } },
      }),
    );
    await waitFor(
      () => follower.stdoutSoFar().toString().includes('← result #1'),
      20_000,
      'the follow output',
    );
    run.child.stdin.end();
    await run.result;
    follower.child.kill('SIGINT');
    const result = await follower.result;
    expect(result.code).toBe(0);
    const out = result.stdout.toString();
    expect(out).toMatch(/→ tools\/call add #1 \(\d+ B\)/);
    expect(out).toMatch(/← result #1 \(\d+ B\) \d+\.\d ms/);
  });
});
