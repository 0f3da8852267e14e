import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '@mcpsandbox/backend-e2b/testing';
import { fakeMcpServerBinPath } from '@mcpsandbox/backend-fake';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, spawnBin } from './helpers.js';
import { connectV2, MODERN, modernRequest, surface, V2_SERVER } from './v2-helpers.js';

// Protocol 2026-07-28 (no initialize: server/discover, `_meta` on each request) and 2025-11-25,
// with the real v2 client and servers built with the real v2 server package, direct and through
// `mcp-sandbox run` on each backend: what the client gets is the same.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
let fake: FakeE2B;
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterAll(() => fake.close());

// The e2b fake starts before the tests run, so its addresses are read then.
const backends: Array<[string, string[], () => Record<string, string>]> = [
  ['none', ['--backend', 'none'], () => ({})],
  ['local', ['--mount', `${REPO}:ro`], () => ({})],
  [
    'e2b (offline fake)',
    ['--backend', 'e2b'],
    () => ({ E2B_API_KEY: FAKE_API_KEY, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl }),
  ],
];

async function surfaceOf(run: string[] | undefined, era: 'modern' | 'legacy', env: Record<string, string>) {
  const server = ['node', V2_SERVER];
  const command = run
    ? { run: true, args: [...run, '--env', 'MCP_ERA', '--', ...server] }
    : { run: false, args: [V2_SERVER] };
  const { client } = await connectV2(command, era, env);
  try {
    return await surface(client);
  } finally {
    await client.close();
  }
}

describe.each(backends)('protocol eras through run --backend %s', (_name, flags, backendEnv) => {
  it('a 2026-07-28 client and a new-only server: server/discover, tools, resources, prompts as direct', async () => {
    const direct = await surfaceOf(undefined, 'modern', { MCP_ERA: 'modern' });
    const sandboxed = await surfaceOf(flags, 'modern', { ...backendEnv(), MCP_ERA: 'modern' });
    expect(direct.version).toBe(MODERN);
    expect(JSON.stringify(direct.echo)).toContain('echo: across eras');
    expect(sandboxed).toEqual(direct);
  });

  it('a 2025-11-25 client against a server that speaks both eras gets what it gets direct', async () => {
    const direct = await surfaceOf(undefined, 'legacy', { MCP_ERA: 'both' });
    const sandboxed = await surfaceOf(flags, 'legacy', { ...backendEnv(), MCP_ERA: 'both' });
    expect(direct.version).toBe('2025-11-25');
    expect(sandboxed).toEqual(direct);
  });

  it('the 2026-07-28 wire is byte-identical direct and sandboxed', async () => {
    const lines = [
      modernRequest('server-discover-probe-1', 'server/discover'),
      modernRequest(1, 'tools/list'),
      modernRequest(2, 'tools/call', { name: 'echo', arguments: { text: 'bytes' } }),
      modernRequest(3, 'resources/read', { uri: 'fixture://readme' }),
      modernRequest(4, 'prompts/get', { name: 'greeting', arguments: { name: 'Ada' } }),
      modernRequest('a string id', 'resources/list'),
    ];
    const direct = await rawExchange(['node', V2_SERVER], lines, { MCP_ERA: 'modern' });
    const run = spawnBin(['run', ...flags, '--quiet', '--env', 'MCP_ERA', '--', 'node', V2_SERVER], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MCP_ERA: 'modern',
      ...backendEnv(),
    });
    run.child.stdin.end(lines.join(''));
    const sandboxed = await run.result;
    expect(direct.split('\n').filter(Boolean)).toHaveLength(lines.length);
    expect(direct).toContain('"id":"a string id"');
    expect(sortedLines(sandboxed.stdout.toString())).toEqual(sortedLines(direct));
  });

  it('a 2025-11-25 client against a new-only server fails exactly as it does direct', async () => {
    const direct = await legacyConnectError([V2_SERVER], { MCP_ERA: 'modern' });
    const sandboxed = await legacyConnectError(
      [BIN, 'run', ...flags, '--env', 'MCP_ERA', '--', 'node', V2_SERVER],
      {
        ...backendEnv(),
        MCP_ERA: 'modern',
      },
    );
    expect(direct).toMatch(/Unsupported protocol version: 2025-11-25/);
    expect(sandboxed).toBe(direct);
  });
});

describe('protocol eras on the fake backend', () => {
  it('its fake server answers a 2026-07-28 client as it does direct', async () => {
    const open = async (run: boolean) =>
      connectV2(
        run
          ? { run: true, args: ['--backend', 'fake', '--', 'fake-mcp-server'] }
          : { run: false, args: [fakeMcpServerBinPath()] },
        'modern',
      );
    const read = async (run: boolean) => {
      const { client } = await open(run);
      try {
        return {
          version: client.getNegotiatedProtocolVersion(),
          tools: await client.listTools(),
          echo: await client.callTool({ name: 'echo', arguments: { text: 'fake' } }),
        };
      } finally {
        await client.close();
      }
    };
    const direct = await read(false);
    expect(direct.version).toBe(MODERN);
    expect(await read(true)).toEqual(direct);
  });
});

function sortedLines(text: string): string[] {
  return text.split('\n').filter(Boolean).sort();
}

/** Writes `lines` to a server started directly, then EOF; its whole stdout. */
function rawExchange(command: string[], lines: string[], env: Record<string, string>): Promise<string> {
  const [file, ...args] = command as [string, ...string[]];
  const child = spawn(file, args, {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  child.stdin.end(lines.join(''));
  return new Promise((resolve) => child.on('close', () => resolve(out)));
}

/** The error a 2025-11-25 client (SDK v1) gets connecting to `node <args>`. */
async function legacyConnectError(args: string[], env: Record<string, string>): Promise<string> {
  const transport = new LegacyTransport({
    command: process.execPath,
    args,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...env },
    stderr: 'pipe',
  });
  const client = new LegacyClient({ name: 'legacy-test', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport);
    return 'connected';
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.close();
  }
}
