/**
 * `run` on local makes its sandbox and starts the server while the program loads (early-start.ts,
 * `EarlyLocalStart`). Through the built binary and a real sandbox: the early sandbox is the
 * session's when the command line is the plainest, the user sees what a start without it shows,
 * and when the program refuses the command line or is stopped at once, nothing is left running
 * and no session directory is left behind.
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { line, processesWithMarker, spawnBin, stdoutMessages, waitFor } from './helpers.js';

const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };
/**
 * A server of one line of JavaScript: no file of this repository, which a sandbox does not see
 * when the checkout lies under a directory it hides (a temp dir).
 */
const SERVER = [
  process.execPath,
  '-e',
  "require('readline').createInterface({input:process.stdin}).on('line',(l)=>{const m=JSON.parse(l);" +
    "if(m.id!==undefined)process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:m.id,result:{}})+'\\n')})",
];
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-early-local-'));
// Run as root, the sandbox is uid 65534: its session directory's parents must let it through.
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A private TMPDIR for one run: the sandbox's session directory is made there. */
function privateTmp(): string {
  const tmp = mkdtempSync(join(dir, 'tmp-'));
  chmodSync(tmp, 0o755);
  return tmp;
}

function sessionDirs(tmp: string): string[] {
  return readdirSync(tmp).filter((name) => name.startsWith('mcp-sandbox-'));
}

function envWith(tmp: string, more: Record<string, string> = {}): Record<string, string | undefined> {
  return { ...process.env, TMPDIR: tmp, MCP_SANDBOX_BACKEND: '', ...more };
}

async function session(args: string[], env: Record<string, string | undefined>) {
  const run = spawnBin(['run', ...args], env);
  run.child.stdin.write(line(PING));
  await waitFor(() => stdoutMessages(run.stdoutSoFar()).some((m) => m.id === 1), 20_000, 'the answer');
  run.child.stdin.end();
  return run.result;
}

describe('run on local: the sandbox is made while the program loads', () => {
  it('uses the sandbox and server it started early, and leaves no session directory', async () => {
    const tmp = privateTmp();
    const result = await session(['--', ...SERVER], envWith(tmp, { MCP_SANDBOX_DEBUG: '1' }));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('the sandbox was made early, while the program loaded');
    expect(result.stderr).not.toContain('starting again');
    expect(sessionDirs(tmp)).toEqual([]);
  });

  it('says on stderr what a start without it says, in the same order', async () => {
    const tmp = privateTmp();
    const lines = (text: string) =>
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => l.replace(/local-[0-9a-f-]{36}/g, 'local-<id>'));
    const early = await session(['--', ...SERVER], envWith(tmp));
    // --kill-grace is not a flag the early start knows: this start makes its sandbox as ever.
    const late = await session(['--kill-grace', '3s', '--', ...SERVER], envWith(tmp));
    expect(early.code).toBe(0);
    expect(late.code).toBe(0);
    expect(lines(early.stderr)).toEqual(lines(late.stderr));
    expect(lines(early.stderr).length).toBeGreaterThan(0);
  });

  it('closes the early sandbox when the program then refuses the command line', async () => {
    const tmp = privateTmp();
    const marker = `early-local-refused-${process.pid}-${Date.now()}`;
    const trace = join(dir, 'no-such-dir', 'trace.jsonl');
    const result = await spawnBin(
      ['run', '--trace', trace, '-e', `EARLY_MARK=${marker}`, '--', 'sleep', '30'],
      envWith(tmp, { MCP_SANDBOX_DEBUG: '1' }),
    ).result;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('cannot open for appending');
    // Control: the early sandbox had been made (the program says it closed it).
    expect(result.stderr).toContain('the sandbox started early was not used: closed it');
    // At once: the hints relay too, which lives outside the sandbox's pid namespace.
    expect(processesWithMarker(marker)).toEqual([]);
    expect(sessionDirs(tmp)).toEqual([]);
  });

  it('leaves nothing running and no session directory when stopped (SIGTERM) at once', async () => {
    const tmp = privateTmp();
    const marker = `early-local-stopped-${process.pid}-${Date.now()}`;
    const run = spawnBin(['run', '-e', `EARLY_MARK=${marker}`, '--', 'sleep', '30'], envWith(tmp));
    await waitFor(() => processesWithMarker(marker).length > 0, 20_000, 'the early server');
    run.child.kill('SIGTERM');
    const result = await run.result;
    expect(result.code).not.toBe(0);
    await waitFor(() => processesWithMarker(marker).length === 0, 2_000, 'the end of the sandbox');
    expect(sessionDirs(tmp)).toEqual([]);
  });

  it('makes no sandbox early when MCP_SANDBOX_BACKEND chooses another backend', async () => {
    const tmp = privateTmp();
    const result = await session(
      ['--', ...SERVER],
      envWith(tmp, { MCP_SANDBOX_DEBUG: '1', MCP_SANDBOX_BACKEND: 'none' }),
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('the server was started early');
    expect(result.stderr).not.toContain('sandbox was made early');
  });
});
