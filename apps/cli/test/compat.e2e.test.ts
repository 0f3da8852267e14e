import { spawn } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '@mcpsandbox/backend-e2b/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, traceRecords } from './helpers.js';

// Command lines and traces of mcp-sandbox 0.2 keep working.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const FS_SERVER = fileURLToPath(new URL('./fixtures/fs-server.mjs', import.meta.url));
const TRACE_02 = fileURLToPath(new URL('./fixtures/trace-0.2.jsonl', import.meta.url));

let project: string;
let fake: FakeE2B;
beforeAll(async () => {
  // A project folder with docs to hand over, a symlink in them pointing at a host secret.
  project = mkdtempSync(join(tmpdir(), 'mcp-sandbox-compat-'));
  mkdirSync(join(project, 'docs', 'sub'), { recursive: true });
  writeFileSync(join(project, 'docs', 'a.txt'), 'original');
  writeFileSync(join(project, 'docs', 'sub', 'b.txt'), 'nested');
  writeFileSync(join(project, 'secret.txt'), 'host secret');
  symlinkSync(join(project, 'secret.txt'), join(project, 'docs', 'link'));
  fake = await startFakeE2B();
});
afterAll(async () => {
  rmSync(project, { recursive: true, force: true });
  await fake.close();
});

const baseEnv = () => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' });
const e2bEnv = () => ({
  E2B_API_KEY: FAKE_API_KEY,
  E2B_API_URL: fake.apiUrl,
  E2B_SANDBOX_URL: fake.sandboxUrl,
});

async function connectIn(cwd: string, args: string[], env: Record<string, string>) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'run', ...args],
    env,
    cwd,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'compat-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  const call = async (name: string, args: Record<string, string> = {}) => {
    const result = await client.callTool({ name, arguments: args });
    return (result.content as Array<{ text: string }>)[0]?.text;
  };
  return { client, call, stderr: () => stderr };
}

describe('--fs path[:to]: a private writable copy, as in 0.2', () => {
  it.each([
    ['local', [`--mount`, `${REPO}:ro`], {}],
    ['e2b', ['--backend', 'e2b'], { e2b: true }],
  ] as const)(
    'on %s: the server changes its copy, the host copy is unchanged, symlinks are not followed',
    async (_name, extra, how) => {
      const trace = join(project, `${_name}.jsonl`);
      const env = { ...baseEnv(), KEY: 'from-host', ...('e2b' in how ? e2bEnv() : {}) };
      const { client, call, stderr } = await connectIn(
        project,
        [
          ...extra,
          '--fs',
          './docs',
          '--ttl',
          '600',
          '--env',
          'KEY',
          '--trace',
          trace,
          '--',
          'node',
          FS_SERVER,
          '/home/user/docs',
        ],
        env,
      );
      try {
        expect(await call('read', { path: 'a.txt' })).toBe('original');
        expect(await call('read', { path: 'sub/b.txt' })).toBe('nested');
        expect(await call('env', { path: 'KEY' })).toBe('from-host');
        // The link to the host secret did not come along, neither as a link nor as its target.
        expect(await call('exists', { path: 'link' })).toBe('false');
        expect(await call('write', { path: 'a.txt', text: 'changed by the server' })).toBe('written');
        expect(await call('write', { path: 'new.txt', text: 'made inside' })).toBe('written');
        expect(await call('read', { path: 'a.txt' })).toBe('changed by the server');
      } finally {
        await client.close();
      }
      // Nothing comes back.
      expect(readFileSync(join(project, 'docs', 'a.txt'), 'utf8')).toBe('original');
      expect(readdirSync(join(project, 'docs')).sort()).toEqual(['a.txt', 'link', 'sub']);
      expect(lstatSync(join(project, 'docs', 'link')).isSymbolicLink()).toBe(true);
      expect(stderr()).toContain(
        '--fs ./docs: 2 file(s), 14 B copied to /home/user/docs, 1 symlink(s) skipped',
      );
      // The server's stderr is told apart from mcp-sandbox's own: prefixed, its control characters
      // shown, so its "\r" and erase-line cannot paint "mcp-sandbox: error: spoofed" over the prefix.
      // (Fails before the [sandbox] prefix: the raw line reached the terminal.)
      expect(stderr()).toMatch(/\[sandbox\] fs-server ready\\(r|x0d)\\x1b\[2Kmcp-sandbox: error: spoofed\n/);
      expect(stderr()).not.toMatch(/^mcp-sandbox: error: spoofed/m);
      // A line that merely says it is ours is prefixed too.
      expect(stderr()).toContain('[sandbox] mcp-sandbox: error: plain spoof\n');
      expect(stderr()).not.toMatch(/^mcp-sandbox: error: plain spoof/m);
      expect(stderr()).not.toContain('\r');
      expect(stderr()).not.toContain('\u001b');
      // Control: the server really wrote those bytes (the trace keeps them as they were).
      const stderrRecords = traceRecords(trace).filter((r) => r.type === 'stderr');
      expect(stderrRecords.map((r) => r.text)).toContain(
        'fs-server ready\r\u001b[2Kmcp-sandbox: error: spoofed',
      );
    },
  );

  it('refuses before any sandbox exists: a symlink given directly, more than 2000 files, a backend without a filesystem', async () => {
    const before = fake.requests.length;
    symlinkSync(join(project, 'docs'), join(project, 'docs-link'));
    const link = await spawnIn(
      project,
      ['run', '--backend', 'e2b', '--fs', 'docs-link', '--', 'true'],
      e2bEnv(),
    );
    expect(link.code).toBe(2);
    expect(link.stderr).toContain('--fs docs-link: refusing to follow a symlink');

    const many = join(project, 'many');
    mkdirSync(many);
    for (let i = 0; i <= 2000; i++) writeFileSync(join(many, `f${i}`), '');
    const tooMany = await spawnIn(
      project,
      ['run', '--backend', 'e2b', '--fs', 'many', '--', 'true'],
      e2bEnv(),
    );
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toContain('--fs many: more than 2000 files; copy a narrower directory');
    expect(fake.requests.slice(before).filter((r) => r.startsWith('POST'))).toEqual([]);

    const none = await spawnIn(project, ['run', '--backend', 'none', '--fs', 'docs', '--', 'true'], {});
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('backend none has none; use --backend local or e2b');
  });
});

/** The binary in `cwd`; stdin ends at once, unless `hold` keeps it open (a client that waits). */
function spawnIn(cwd: string, args: string[], env: Record<string, string>, hold = false) {
  return new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...baseEnv(), ...env } });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    if (hold) child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n');
    else child.stdin.end();
    child.on('close', (code) => resolve({ code, stderr, stdout }));
  });
}

describe('the default backend changed: never a silent move away from E2B', () => {
  const serve = ['--', 'node', FS_SERVER, '/'];

  it('with E2B_API_KEY and no --backend: one note on stderr, naming --backend e2b and MCP_SANDBOX_BACKEND', async () => {
    const result = await spawnIn(project, ['run', '--mount', `${REPO}:ro`, ...serve], e2bEnv());
    expect(result.code).toBe(0);
    const notes = result.stderr.split('\n').filter((l) => l.includes('E2B_API_KEY is set'));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('--backend e2b');
    expect(notes[0]).toContain('MCP_SANDBOX_BACKEND=e2b');
    expect(result.stderr).toContain('backend local, isolation os');
  });

  it('MCP_SANDBOX_BACKEND=e2b sets the default backend; an explicit --backend is never second-guessed', async () => {
    const viaEnv = await spawnIn(project, ['run', ...serve], { ...e2bEnv(), MCP_SANDBOX_BACKEND: 'e2b' });
    expect(viaEnv.code).toBe(0);
    expect(viaEnv.stderr).toContain('backend e2b, isolation microvm');
    expect(viaEnv.stderr).not.toContain('E2B_API_KEY is set');
    const explicit = await spawnIn(
      project,
      ['run', '--backend', 'local', '--mount', `${REPO}:ro`, ...serve],
      e2bEnv(),
    );
    expect(explicit.code).toBe(0);
    expect(explicit.stderr).not.toContain('E2B_API_KEY is set');
  });

  it('when local cannot run here and a key is set, stderr says --backend e2b would work', async () => {
    // First on PATH, a bubblewrap too old for the sandbox's flags: the local sandbox is unusable.
    const bin = mkdtempSync(join(tmpdir(), 'mcp-sandbox-oldbwrap-'));
    writeFileSync(join(bin, 'bwrap'), '#!/bin/sh\necho "bubblewrap 0.4.0"\nexit 1\n', { mode: 0o755 });
    const env = { PATH: `${bin}:${process.env.PATH}` };
    const args = ['run', '--backend', 'local', '--mount', `${REPO}:ro`, ...serve];
    const withKey = await spawnIn(project, args, { ...e2bEnv(), ...env }, true);
    // Control: without a key the same failure, and no hint.
    const withoutKey = await spawnIn(project, args, env, true);
    // A client that closes stdin at once still hears why the sandbox could not start.
    const closedAtOnce = await spawnIn(project, args, env);
    rmSync(bin, { recursive: true, force: true });
    expect(closedAtOnce.code).toBe(125);
    expect(closedAtOnce.stderr).toContain('0.4.0');
    expect(withKey.code).toBe(125);
    expect(withKey.stderr).toContain('0.4.0');
    expect(withKey.stderr).toContain('--backend e2b would run this server in an E2B micro-VM instead');
    expect(withoutKey.code).toBe(125);
    expect(withoutKey.stderr).toContain('0.4.0');
    expect(withoutKey.stderr).not.toContain('--backend e2b');
  });
});

describe('trace reads 0.2 traces', () => {
  it('summarizes a {ts, dir, msg} trace and says which format it read', async () => {
    const text = await spawnIn(project, ['trace', TRACE_02], {});
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^format: mcp-sandbox 0\.2 trace/);
    expect(text.stdout).toContain('messages: 5 to server');
    expect(text.stdout).toContain('tools/call 2');
    expect(text.stdout).toMatch(/echo\s+2\s+1\s+/);
    const json = JSON.parse((await spawnIn(project, ['trace', '--json', TRACE_02], {})).stdout);
    expect(json.format).toBe('0.2');
    expect(json.sessions).toHaveLength(1);
    expect(json.sessions[0].tools.echo.p50Ms).toBe(20);
    expect(json.sessions[0].durationMs).toBe(3000);
  });

  it('a file where a 1.x trace was appended to a 0.2 one is read in full', async () => {
    const mixed = join(project, 'mixed.jsonl');
    writeFileSync(mixed, readFileSync(TRACE_02));
    const run = await spawnIn(
      project,
      ['run', '--backend', 'none', '--trace', mixed, '--', 'node', FS_SERVER, '/'],
      {},
    );
    expect(run.code).toBe(0);
    const json = JSON.parse((await spawnIn(project, ['trace', '--json', mixed], {})).stdout);
    expect(json.format).toBe('0.2+v1');
    expect(json.sessions).toHaveLength(2);
    expect(json.sessions[1].backend).toBe('none');
    expect(dirname(mixed)).toBe(project);
  });
});
