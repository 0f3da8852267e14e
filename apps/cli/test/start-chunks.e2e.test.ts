import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fakeMcpServerBinPath } from '@mcpsandbox/backend-fake';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Every MCP client starts every wrapped server at each launch: a `run` start must load run's code
// and nothing of the other commands. The built bundle is copied without the chunks that hold the
// other commands' code; a whole `run --backend none` session must still work in the copy. The
// copy sits outside the repository: a start of `none` needs no third-party package either.
const APP = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(APP, 'dist');

/** One module of each other command's implementation, as the bundle names it in its comments. */
const OTHER_COMMANDS: Readonly<Record<string, string>> = {
  'wrap, unwrap, ls': 'packages/cli/dist/config/operations.js',
  'wrap (config editing)': 'packages/cli/dist/config/edit.js',
  doctor: 'packages/cli/dist/doctor/checks.js',
  inspect: 'packages/cli/dist/inspect/connect.js',
  serve: 'packages/cli/dist/serve/sessions.js',
  trace: 'packages/core/dist/trace-summary.js',
  update: 'packages/core/dist/npx-pin.js',
};

const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
})}\n`;

interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function start(bin: string, args: readonly string[], input?: string): Promise<Result> {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    // One answer is the whole session: then the client closes, as a client that quits would.
    if (input !== undefined && stdout.includes('\n')) child.stdin.end();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  if (input === undefined) child.stdin.end();
  else child.stdin.write(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** The chunk of the bundle holding each module, by the module comments the bundler writes. */
function chunkOf(module: string): string | undefined {
  return readdirSync(DIST)
    .filter((name) => name.endsWith('.js'))
    .find((name) => readFileSync(join(DIST, name), 'utf8').includes(`\n// ../../${module}\n`));
}

describe('a run start loads no other command', () => {
  const copy = mkdtempSync(join(tmpdir(), 'mcp-sandbox-start-chunks-'));
  const bin = join(copy, 'dist', 'bin.js');
  const removed = new Map<string, string>();
  beforeAll(() => {
    for (const [command, module] of Object.entries(OTHER_COMMANDS)) {
      const chunk = chunkOf(module);
      // The check itself: a module that is no longer found would make the test pass for nothing.
      if (!chunk) throw new Error(`no chunk of ${DIST} holds ${module} (${command}): update this test`);
      removed.set(chunk, command);
    }
    mkdirSync(join(copy, 'dist'));
    copyFileSync(join(APP, 'package.json'), join(copy, 'package.json'));
    for (const name of readdirSync(DIST))
      if (name.endsWith('.js') && !removed.has(name))
        copyFileSync(join(DIST, name), join(copy, 'dist', name));
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it('runs a whole none session without the chunks of wrap, ls, doctor, inspect, serve, trace, update', async () => {
    expect(removed.has('bin.js')).toBe(false);
    const result = await start(
      bin,
      ['run', '--backend', 'none', '--', process.execPath, fakeMcpServerBinPath()],
      INITIALIZE,
    );
    expect(result.stderr).not.toMatch(/Cannot find module|ERR_MODULE_NOT_FOUND/);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout.split('\n')[0] as string)).toMatchObject({ id: 1, result: {} });
  }, 60_000);

  it('still shows every command and its help, which are registered at start', async () => {
    for (const args of [['--help'], ['wrap', '--help'], ['doctor', '--help'], ['serve', '--help']]) {
      const [full, stripped] = await Promise.all([start(join(DIST, 'bin.js'), args), start(bin, args)]);
      expect(stripped).toEqual(full);
      expect(full.code).toBe(0);
    }
  }, 60_000);

  it('ends a command whose code cannot load with one error line and exit 125, not a crash', async () => {
    const result = await start(bin, ['doctor']);
    expect(result.code).toBe(125);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^mcp-sandbox: error: unexpected failure: Cannot find module .*doctor/);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  }, 60_000);
});

// The egress proxy (and `node:http`) serves only a sandbox with grants, and loads when its socket
// arrives: a default `local` session must work from a bundle without it.
describe('a local start without grants loads no egress proxy', () => {
  const copy = mkdtempSync(join(tmpdir(), 'mcp-sandbox-no-proxy-'));
  const bin = join(copy, 'dist', 'bin.js');
  beforeAll(() => {
    const proxy = chunkOf('packages/egress/dist/proxy.js');
    if (!proxy) throw new Error(`no chunk of ${DIST} holds the egress proxy: update this test`);
    expect(readFileSync(join(DIST, proxy), 'utf8')).toContain('from "node:http"');
    mkdirSync(join(copy, 'dist'));
    copyFileSync(join(APP, 'package.json'), join(copy, 'package.json'));
    for (const name of readdirSync(DIST))
      if (name.endsWith('.js') && name !== proxy) copyFileSync(join(DIST, name), join(copy, 'dist', name));
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it('runs a whole local session (its DNS hints included) without the proxy chunk', async () => {
    // A server of one line: no file of the repository, which the sandbox hides under a temp dir.
    const server =
      "require('readline').createInterface({input:process.stdin}).on('line',(l)=>" +
      "process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:JSON.parse(l).id,result:{}})+'\\n'))";
    const result = await start(bin, ['run', '--', process.execPath, '-e', server], INITIALIZE);
    expect(result.stderr).not.toMatch(/Cannot find module|ERR_MODULE_NOT_FOUND|proxy could not be started/);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout.split('\n')[0] as string)).toMatchObject({ id: 1, result: {} });
  }, 60_000);
});
