/**
 * A client config that sets a variable for `mcp-sandbox run` (`claude mcp add -e KEY=… -- mcp-sandbox
 * run -- …`) gives it to mcp-sandbox, which withholds it from the server: stderr must say which flag
 * passes it. The hint is built from the host's own variable names, never from the server's text.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { line, spawnBin, stdoutMessages, traceRecords, waitFor } from './helpers.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const ASKER = fileURLToPath(new URL('./fixtures/env-asker.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-withheld-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BRAVE_VALUE = 'brave-value-7f3a9c';
const HINT = 'mcp-sandbox: warning: the server asked for';
/** Brave's API host is known: on local the hint offers the stand-in first, then --env. */
const BRAVE_HINT = `${HINT} BRAVE_API_KEY, which was withheld: pass it with --secret BRAVE_API_KEY@api.search.brave.com --allow-net api.search.brave.com (the server gets a stand-in, the real value goes only to api.search.brave.com), or with --env BRAVE_API_KEY`;

/** As the client starts it: the config's variables in mcp-sandbox's environment, no --env. */
function clientEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/',
    BRAVE_API_KEY: BRAVE_VALUE,
    ...extra,
  };
}

/** Stdin stays open, as a client's does, until the server has exited or answered `input`. */
async function runAsker(args: string[], env: Record<string, string>, input?: string) {
  const run = spawnBin(['run', '--mount', `${REPO}:ro`, ...args], env);
  if (input !== undefined) {
    run.child.stdin.write(input);
    await waitFor(() => run.stdoutSoFar().includes(10), 20_000, 'the answer');
    run.child.stdin.end();
  }
  const result = await run.result;
  run.child.stdin.destroy();
  return result;
}

function hints(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.startsWith(HINT));
}

describe('a withheld variable the server asks for', () => {
  it('a server that prints "BRAVE_API_KEY environment variable is required" gets the hint: --secret for its known host, or --env', async () => {
    const trace = join(dir, 'brave.jsonl');
    const result = await runAsker(
      ['--trace', trace, '--', 'node', ASKER, 'stderr', 'BRAVE_API_KEY environment variable is required'],
      clientEnv({}),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('BRAVE_API_KEY environment variable is required');
    expect(hints(result.stderr)).toEqual([BRAVE_HINT]);
    expect(result.stderr).not.toContain(BRAVE_VALUE);
    const records = traceRecords(trace).filter((r) => r.type === 'env-hint');
    expect(records).toMatchObject([
      { name: 'BRAVE_API_KEY', flag: '--secret BRAVE_API_KEY@api.search.brave.com' },
    ]);
    expect(JSON.stringify(traceRecords(trace))).not.toContain(BRAVE_VALUE);
  });

  it('control: the same server given --env BRAVE_API_KEY gets no hint', async () => {
    const result = await runAsker(
      [
        '--env',
        'BRAVE_API_KEY',
        '--',
        'node',
        ASKER,
        'stderr',
        'BRAVE_API_KEY environment variable is required',
      ],
      clientEnv({}),
    );
    // The server really ran and printed its line: only the hint is missing.
    expect(result.stderr).toContain('BRAVE_API_KEY environment variable is required');
    expect(hints(result.stderr)).toEqual([]);
  });

  it('a tool result marked isError that names the variable gets the hint too', async () => {
    const input = [
      line({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search', arguments: {} } }),
    ].join('');
    const result = await runAsker(
      ['--', 'node', ASKER, 'result', 'Error: BRAVE_API_KEY is not set'],
      clientEnv({}),
      input,
    );
    expect(stdoutMessages(result.stdout)).toMatchObject([{ id: 1, result: { isError: true } }]);
    expect(hints(result.stderr)).toEqual([BRAVE_HINT]);
  });

  it('attack: a host variable whose name holds control characters is never named, whatever the server prints', async () => {
    const evil = 'EVIL\u001b]0;owned\u0007_API_KEY';
    const result = await runAsker(
      ['--', 'node', ASKER, 'stderr', `${evil} is required; also BRAVE_API_KEY\u001b[2J`],
      clientEnv({ [evil]: 'x'.repeat(8) }),
    );
    // Control: the server's line came through (escaped), so the name was printed and scanned.
    expect(result.stderr).toContain('EVIL\\x1b]0;owned\\x07_API_KEY is required');
    // Only the valid name is hinted; no line of mcp-sandbox's carries the hostile name or a raw escape.
    expect(hints(result.stderr)).toEqual([BRAVE_HINT]);
    expect(result.stderr).not.toContain('\u001b');
    expect(result.stderr).not.toContain('\u0007');
  });

  it('attack: a server that prints the value of a withheld variable gets no hint carrying it', async () => {
    const result = await runAsker(
      ['--', 'node', ASKER, 'stderr', `need ${BRAVE_VALUE} and SERVICE_TOKEN_VALUE_NAME, and BRAVE_API_KEY`],
      clientEnv({ SERVICE_TOKEN: 'SERVICE_TOKEN_VALUE_NAME' }),
    );
    expect(result.stderr).toContain('SERVICE_TOKEN_VALUE_NAME'); // control: printed and scanned
    const said = hints(result.stderr);
    expect(said).toEqual([BRAVE_HINT]);
    expect(said.join('\n')).not.toContain(BRAVE_VALUE);
    expect(said.join('\n')).not.toContain('SERVICE_TOKEN');
  });
});
