import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { earlyRun } from '../src/early-start.js';
import { FAKE_SERVER, line, processesWithMarker, spawnBin, stdoutMessages, waitFor } from './helpers.js';

const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-early-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A server that notes each of its starts in a file, then is the fake MCP server. */
function countedServer(): { argv: string[]; starts: () => number } {
  const file = join(dir, `starts-${n++}`);
  const script = `echo start >> '${file}'; exec "$0" "$1"`;
  return {
    argv: ['sh', '-c', script, process.execPath, FAKE_SERVER],
    starts: () => {
      try {
        return readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
      } catch {
        return 0;
      }
    },
  };
}

const debugEnv = { ...process.env, MCP_SANDBOX_DEBUG: '1' };

async function session(args: string[], env: Record<string, string | undefined> = debugEnv) {
  const run = spawnBin(['run', ...args], env);
  run.child.stdin.write(line(PING));
  await waitFor(() => stdoutMessages(run.stdoutSoFar()).some((m) => m.id === 1), 20_000, 'the answer');
  run.child.stdin.end();
  return run.result;
}

describe('run --backend none: the server starts while the program loads', () => {
  it('uses the server it started early, and starts it once', async () => {
    const server = countedServer();
    const result = await session(['--backend', 'none', '-e', 'EARLY_MARK=one', '--', ...server.argv]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('the server was started early, while the program loaded');
    expect(server.starts()).toBe(1);
  });

  it('ends the early server when the program then refuses the command line, leaving nothing running', async () => {
    const marker = `early-refused-${process.pid}-${Date.now()}`;
    const trace = join(dir, 'no-such-dir', 'trace.jsonl');
    const run = spawnBin(
      ['run', '--backend', 'none', '--trace', trace, '-e', `EARLY_MARK=${marker}`, '--', 'sleep', '30'],
      debugEnv,
    );
    const result = await run.result;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('cannot open for appending');
    // Control: it had started (the line names its pid); now neither it nor its group is alive.
    const pid = Number(/started early \(pid (\d+)\) was not used: ended it/.exec(result.stderr)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(() => process.kill(pid, 0)).toThrow();
    expect(processesWithMarker(marker)).toEqual([]);
  });

  it('starts nothing for a --ttl the program refuses', async () => {
    const server = countedServer();
    const result = await spawnBin(
      ['run', '--backend', 'none', '--ttl', 'soon', '--', ...server.argv],
      debugEnv,
    ).result;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--ttl "soon"');
    expect(server.starts()).toBe(0);
  });

  it('leaves nothing running when stopped (SIGTERM) as soon as the early server exists', async () => {
    const marker = `early-stopped-${process.pid}-${Date.now()}`;
    const run = spawnBin(
      ['run', '--backend', 'none', '-e', `EARLY_MARK=${marker}`, '--', 'sleep', '30'],
      debugEnv,
    );
    await waitFor(() => processesWithMarker(marker).length > 0, 20_000, 'the early server');
    run.child.kill('SIGTERM');
    const result = await run.result;
    expect(result.code).not.toBe(0);
    expect(processesWithMarker(marker), `${result.code} ${result.signal} ${result.stderr}`).toEqual([]);
  });

  it('starts no server early for a command line it does not know, and runs it as always', async () => {
    const server = countedServer();
    const result = await session(['--backend', 'none', '--deny-tool', 'x*', '--', ...server.argv]);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain('started early');
    expect(server.starts()).toBe(1);
  });

  it('passes the --env the program would pass, and refuses an unset one before starting anything', async () => {
    const server = countedServer();
    const env = { ...debugEnv, EARLY_GIVEN: 'given-value' };
    const result = await session(['--backend', 'none', '--env', 'EARLY_GIVEN', '--', ...server.argv], env);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('started early');
    const unset = countedServer();
    const refused = await spawnBin(
      ['run', '--backend', 'none', '--env', 'EARLY_NOT_SET', '--', ...unset.argv],
      debugEnv,
    ).result;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('EARLY_NOT_SET is not set here');
    expect(unset.starts()).toBe(0);
  });
});

describe('earlyRun: only the plainest command lines start early', () => {
  const env = {};
  it('takes run --backend none with --env, --ttl, --trace, -q, then -- and a command', () => {
    expect(earlyRun(['run', '--backend', 'none', '--', 'node', 's.js', '--flag'], env)).toEqual({
      backend: 'none',
      command: ['node', 's.js', '--flag'],
      env: [],
    });
    expect(
      earlyRun(
        ['run', '-q', '-b', 'none', '-e', 'A', '--env', 'B=2', '--ttl', '5m', '--trace', 't', '--', 'x'],
        env,
      ),
    ).toEqual({ backend: 'none', command: ['x'], env: ['A', 'B=2'], ttl: '5m' });
  });

  it('takes the default backend, local, and a wrapped entry’s marker', () => {
    expect(earlyRun(['run', '--', 'node', 's.js'], env)).toEqual({
      backend: 'local',
      command: ['node', 's.js'],
      env: [],
    });
    expect(earlyRun(['run', '--wrapped', '-b', 'local', '-e', 'A', '--', 'npx', '-y', 'p'], env)).toEqual({
      backend: 'local',
      command: ['npx', '-y', 'p'],
      env: ['A'],
    });
  });

  it('chooses the backend as the program does when --backend is not given (MCP_SANDBOX_BACKEND)', () => {
    const args = ['run', '--', 'node'];
    expect(earlyRun(args, { MCP_SANDBOX_BACKEND: ' none ' })?.backend).toBe('none');
    expect(earlyRun(args, { MCP_SANDBOX_BACKEND: '' })?.backend).toBe('local');
    expect(earlyRun(args, { MCP_SANDBOX_BACKEND: 'e2b' })).toBeUndefined();
    expect(earlyRun(['run', '-b', 'local', '--', 'node'], { MCP_SANDBOX_BACKEND: 'e2b' })?.backend).toBe(
      'local',
    );
  });

  it.each([
    [['run', '--backend', 'e2b', '--', 'node', 's.js']],
    [['run', '--backend', './my-backend.js', '--', 'node']],
    [['run', '--backend', 'none', '--backend', 'none', '--', 'node']],
    [['run', '--backend=none', '--', 'node']],
    [['run', '--backend', 'none', '--env=A', '--', 'node']],
    [['run', '--backend', 'none', '-e', '--', 'node']],
    [['run', '--backend', 'none', '--setup', 'echo', '--', 'node']],
    [['run', '--backend', 'none', '--allow-tool', 'a', '--', 'node']],
    [['run', '--allow-net', 'example.com', '--', 'node']],
    [['run', '--mount', '/srv', '--', 'node']],
    [['run', '--no-host-tls-trust', '--', 'node']],
    [['run', '--backend-option', 'denialHints=off', '--', 'node']],
    [['run', '--state', 'x', '--', 'node']],
    [['run', '--backend', 'none', 'node', 's.js']], // no --
    [['run', '--backend', 'none', '--']], // no command
    [['inspect', '--backend', 'none', '--', 'node']],
    [['run', '--backend', 'none', '-qe', 'A', '--', 'node']],
  ])('refuses %j', (args) => {
    expect(earlyRun(args, env)).toBeUndefined();
  });
});
