import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI_FIXTURES, connect, spawnBin, textOf, traceRecords } from './cli.js';

// `mcp-sandbox run --backend srt` through the built binary, with the real SDK client, a fake
// HOME holding a canary, and a withheld host variable.
const dir = mkdtempSync(join(tmpdir(), 'srt-cli-'));
// Anyone may pass: as root the sandbox runs as nobody, and only the sandbox may keep files out of reach.
chmodSync(dir, 0o755);
const home = join(dir, 'home');
mkdirSync(home);
const CANARY = 'srt-cli-canary-51d2';
writeFileSync(join(home, 'secret.txt'), CANARY);
const WITHHELD = 'withheld-value-9c1e';
// A cache of its own: the install step (and its egress) runs here, whatever another test cached.
const env = {
  HOME: home,
  XDG_CACHE_HOME: join(dir, 'cache'),
  WITHHELD_TOKEN: WITHHELD,
  MCP_SANDBOX_PIN_LOCK: join(dir, 'npx-lock.json'),
};
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const FS_SERVER = join(CLI_FIXTURES, 'fs-server.mjs');
const TINY_SERVER = join(CLI_FIXTURES, 'tiny-server.mjs');

describe('run --backend srt -- npx -y @modelcontextprotocol/server-everything', () => {
  it('lists 13 tools, withholds a host variable, and installs reaching only the registry', async () => {
    const trace = join(dir, 'everything.jsonl');
    const { client, stderr } = await connect(
      [
        '--backend',
        'srt',
        '--env',
        'SHOWN=yes',
        '--trace',
        trace,
        '--',
        'npx',
        '-y',
        '@modelcontextprotocol/server-everything@2026.8.31',
      ],
      env,
    );
    try {
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(13);
      const seen = textOf(await client.callTool({ name: 'get-env', arguments: {} }));
      // Control: an --env variable does cross; the withheld one does not, by name or value.
      expect(seen).toContain('"SHOWN": "yes"');
      expect(seen).not.toContain(WITHHELD);
      expect(seen).not.toContain('WITHHELD_TOKEN');
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('backend srt, isolation os');
    const records = traceRecords(trace);
    const prepare = records.find((r) => r.type === 'sandbox.prepare' && r.cache === 'miss');
    expect(prepare?.network).toEqual(['registry.npmjs.org:443']);
    const proxied = records.filter((r) => r.type === 'sandbox.proxy');
    // Control: the install really went out through the proxy.
    expect(proxied.length).toBeGreaterThan(0);
    for (const record of proxied) {
      expect(record).toMatchObject({ decision: 'allow', host: 'registry.npmjs.org', port: 443 });
    }
  }, 300_000);
});

describe('run --backend srt with a file server', () => {
  const read = async (extra: string[]) => {
    const { client } = await connect(
      ['--backend', 'srt', ...extra, '--', process.execPath, FS_SERVER, home],
      env,
    );
    try {
      return textOf(await client.callTool({ name: 'read', arguments: { path: 'secret.txt' } }));
    } catch (error) {
      return `error: ${(error as Error).message}`;
    } finally {
      await client.close();
    }
  };

  it('cannot read a canary in the HOME; with the home mounted read-only it can (control)', async () => {
    expect(await read([])).not.toContain(CANARY);
    expect(await read(['--mount', `${home}:${home}:ro`])).toContain(CANARY);
  }, 120_000);
});

describe("run --backend srt: srt's shared /tmp/claude on the host", () => {
  it('a file another srt user left in the host /tmp/claude is not readable by the server (control: it reads and writes its own tmp)', async () => {
    // srt's own default temp, made by its other users (Claude Code among them): made here if absent.
    const shared = '/tmp/claude';
    const made = !existsSync(shared);
    if (made) mkdirSync(shared);
    const name = `mcp-sandbox-canary-${process.pid}-${Date.now()}.txt`;
    const LEFT = 'left-by-another-srt-user-3b8e';
    writeFileSync(join(shared, name), LEFT);
    try {
      const { client } = await connect(['--backend', 'srt', '--', process.execPath, FS_SERVER, '/'], env);
      try {
        const call = async (tool: string, args: Record<string, string>) =>
          textOf(await client.callTool({ name: tool, arguments: args }));
        // Control: the server's code runs and can use files, in its own tmp.
        const tmp = await call('env', { path: 'TMPDIR' });
        expect(tmp).toMatch(/^\//);
        expect(await call('write', { path: `${tmp}/own.txt`, text: 'own-tmp-ok' })).toBe('written');
        expect(await call('read', { path: `${tmp}/own.txt` })).toBe('own-tmp-ok');
        const leaked = await call('read', { path: `tmp/claude/${name}` });
        expect(leaked).not.toContain(LEFT);
        expect(await call('exists', { path: `tmp/claude/${name}` })).toBe('false');
      } finally {
        await client.close();
      }
    } finally {
      rmSync(join(shared, name), { force: true });
      if (made) rmSync(shared, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('--require-isolation with --backend srt', () => {
  it('os holds: the session starts and lists tools', async () => {
    const { client } = await connect(
      ['--backend', 'srt', '--require-isolation', 'os', '--', process.execPath, TINY_SERVER],
      env,
    );
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('greet');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('microvm is refused, naming the reason, before any server starts', async () => {
    const run = spawnBin(
      ['run', '--backend', 'srt', '--require-isolation', 'microvm', '--', process.execPath, TINY_SERVER],
      { PATH: process.env.PATH, ...env },
    );
    run.child.stdin.end();
    const { code, stderr } = await run.result;
    expect(code).not.toBe(0);
    expect(stderr).toContain('--require-isolation microvm: backend srt gives isolation os, which is weaker');
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});

describe('mcp-sandbox doctor', () => {
  it('names the srt engine, its version and what it enforces', async () => {
    const { stdout, stderr } = await spawnBin(['doctor'], { PATH: process.env.PATH, ...env }).result;
    const srtLine = `${stdout.toString()}\n${stderr}`.split('\n').find((l) => l.includes('backend srt'));
    expect(srtLine).toBeDefined();
    expect(srtLine).toContain('sandbox-runtime 0.0.83');
    expect(srtLine).toContain('bubblewrap via srt');
    expect(srtLine).toContain('user, pid and network namespaces');
    expect(srtLine).toContain('network only to the host egress proxy');
  }, 120_000);
});
