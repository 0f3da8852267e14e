import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from './helpers.js';

// A real Python server from PyPI (uv installed at the version .ci/run pins): the tools listed
// through the built binary on local are the ones a direct `uvx` lists, cold and warm.

const SERVER = 'mcp-server-time==2026.10.19';
const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-uvx-pypi-'));
chmodSync(root, 0o755);
/** The user's own environment (proxy and TLS trust included), as a client would start either. */
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

async function direct(): Promise<{ tools: unknown; ms: number; time: unknown }> {
  const started = performance.now();
  const transport = new StdioClientTransport({
    command: 'uvx',
    args: [SERVER],
    env: {
      ...userEnv,
      UV_CACHE_DIR: join(root, 'direct-uv-cache'),
      UV_PYTHON_DOWNLOADS: 'never',
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'mcp-sandbox-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const ms = performance.now() - started;
    const time = await client.callTool({ name: 'get_current_time', arguments: { timezone: 'Etc/UTC' } });
    return { tools, ms, time };
  } finally {
    await client.close();
  }
}

async function sandboxed(): Promise<{ tools: unknown; ms: number; time: unknown; stderr: string }> {
  const started = performance.now();
  const { client, stderr } = await connect(['--', 'uvx', SERVER], env);
  try {
    const { tools } = await client.listTools();
    const ms = performance.now() - started;
    const time = await client.callTool({ name: 'get_current_time', arguments: { timezone: 'Etc/UTC' } });
    return { tools, ms, time, stderr: stderr() };
  } finally {
    await client.close();
  }
}

describe('uvx from PyPI through the built binary (local)', () => {
  it(`${SERVER}: the same tools as a direct uvx, pinned on the first start, warm with no resolution`, async () => {
    const plain = await direct();
    const cold = await sandboxed();
    expect(cold.stderr).toMatch(/pinned mcp-server-time==2026\.10\.19 from https:\/\/pypi\.org\/simple/);
    expect(cold.tools).toEqual(plain.tools);
    const warm = await sandboxed();
    expect(warm.stderr).not.toMatch(/resolving|installing/);
    expect(warm.tools).toEqual(plain.tools);
    const shape = (result: unknown) => ({
      isError: (result as { isError?: boolean }).isError ?? false,
      keys: Object.keys(
        JSON.parse((result as { content: Array<{ text: string }> }).content[0]?.text ?? '{}'),
      ).sort(),
    });
    expect(shape(warm.time)).toEqual(shape(plain.time));
    const warmDirect = await direct();
    process.stderr.write(
      `time to first tools/list: direct uvx cold ${Math.round(plain.ms)} ms, warm ${Math.round(warmDirect.ms)} ms; ` +
        `sandboxed cold ${Math.round(cold.ms)} ms, warm ${Math.round(warm.ms)} ms\n`,
    );
  }, 60_000);
});
