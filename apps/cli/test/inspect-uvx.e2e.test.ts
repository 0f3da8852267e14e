/**
 * `inspect` on a uvx server from PyPI (pinned), through the built binary on `local`: the first
 * inspect installs and pins, a second one reads the pin with no resolution; the report names the
 * server and lists the tools a direct `uvx` lists. A uvx option the install step refuses is one
 * line and an exit code, before anything runs.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

const SERVER = 'mcp-server-time==2026.10.19';
const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-inspect-uvx-'));
chmodSync(root, 0o755);
const userEnv = Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)) as Record<
  string,
  string
>;
const env = {
  ...userEnv,
  XDG_CACHE_HOME: join(root, 'cache'),
  MCP_SANDBOX_PIN_LOCK: join(root, 'pins.json'),
};
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Tool {
  readonly name: string;
  readonly required?: readonly string[];
  readonly inputSchema?: { readonly required?: readonly string[] };
}

async function directTools(): Promise<{ name: string; required: string[] }[]> {
  const transport = new StdioClientTransport({
    command: 'uvx',
    args: [SERVER],
    env: { ...userEnv, UV_CACHE_DIR: join(root, 'direct-uv-cache'), UV_PYTHON_DOWNLOADS: 'never' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'mcp-sandbox-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    return (tools as Tool[]).map((t) => ({
      name: t.name,
      required: [...(t.inputSchema?.required ?? [])].sort(),
    }));
  } finally {
    await client.close();
  }
}

async function inspect(args: string[]) {
  const result = await spawnBin(['inspect', ...args], env).result;
  return { ...result, out: result.stdout.toString() };
}

describe('inspect on a uvx server', () => {
  it(`${SERVER}: installs and pins once, reports the tools a direct uvx lists, then starts warm`, async () => {
    const cold = await inspect(['--json', '--', 'uvx', SERVER]);
    expect(cold.code, cold.stderr).toBe(0);
    expect(cold.stderr).toMatch(/pinned mcp-server-time==2026\.10\.19 from https:\/\/pypi\.org\/simple/);
    const report = JSON.parse(cold.out);
    expect(report.server).toMatchObject({ name: 'mcp-time', version: '2026.10.19' });
    expect(report.isolation).toBe('os');
    const listed = (report.tools as Tool[]).map((t) => ({
      name: t.name,
      required: [...(t.required ?? [])].sort(),
    }));
    expect(listed).toEqual(await directTools());
    const warm = await inspect(['--deny-tool', 'convert_*', '--', 'uvx', SERVER]);
    expect(warm.code, warm.stderr).toBe(0);
    expect(warm.stderr).not.toMatch(/resolving|installing/);
    expect(warm.out).toMatch(/^mcp-time 2026\.10\.19 · protocol .* · backend local \(os\)$/m);
    expect(warm.out).toContain('tools (1)');
    expect(warm.out).toContain('get_current_time');
    expect(warm.out).not.toContain('convert_time');
  }, 120_000);

  it('a uvx option the install step refuses: one line, a usage exit code, nothing installed', async () => {
    const result = await inspect(['--', 'uvx', '--with', 'evil-plugin', SERVER]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('uvx option "--with" is not supported');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.out).toBe('');
  });
});
