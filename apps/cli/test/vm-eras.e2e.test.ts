import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { connect, line, spawnBin, stdoutMessages } from './helpers.js';
import { connectV2, MODERN, modernRequest } from './v2-helpers.js';

// The vm backend's app server answers both protocol eras: 2025-11-25 (`initialize`) and
// 2026-07-28 (`server/discover`, `_meta` on each request), to the real v2 and v1 clients.

const require = createRequire(import.meta.url);
const HELLO_APP = join(dirname(require.resolve('@mcpsandbox/vm-sandbox')), '..', 'examples', 'hello-app.js');
const RUN = ['--backend', 'vm', '--env', 'GREETING=Howdy', '--', HELLO_APP];

/** The app's whole surface, through one client of either SDK. */
async function surface(client: Client | LegacyClient) {
  return {
    capabilities: client.getServerCapabilities(),
    tools: (await client.listTools()).tools,
    hello: await client.callTool({ name: 'hello', arguments: { name: 'Ada' } }),
    add: await client.callTool({ name: 'add', arguments: { a: 20, b: 22 } }),
    fail: await client.callTool({ name: 'fail', arguments: {} }),
    resources: (await client.listResources()).resources,
    readme: await client.readResource({ uri: 'hello://readme' }),
    prompts: (await client.listPrompts()).prompts,
    prompt: await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } }),
  };
}

async function v2Surface(era: 'modern' | 'legacy') {
  const { client } = await connectV2({ run: true, args: RUN }, era);
  try {
    return { version: client.getNegotiatedProtocolVersion(), ...(await surface(client)) };
  } finally {
    await client.close();
  }
}

/** Writes `lines` to `run --backend vm`, then EOF: the answers by id. */
async function exchange(lines: string[]): Promise<Map<unknown, Record<string, unknown>>> {
  const run = spawnBin(['run', '--quiet', ...RUN], { PATH: process.env.PATH, HOME: process.env.HOME });
  run.child.stdin.end(lines.join(''));
  const result = await run.result;
  expect(result.code).toBe(0);
  return new Map(stdoutMessages(result.stdout).map((m) => [m.id, m]));
}

const CALLS: Array<[string, Record<string, unknown>]> = [
  ['tools/list', {}],
  ['tools/call', { name: 'hello', arguments: { name: 'Ada' } }],
  ['tools/call', { name: 'fail', arguments: {} }],
  ['resources/list', {}],
  ['resources/read', { uri: 'hello://readme' }],
  ['prompts/list', {}],
  ['prompts/get', { name: 'greet', arguments: { name: 'Ada' } }],
];

/** A result without what 2026-07-28 adds to every result (`resultType`, cache hints, `_meta`). */
function eraFree(result: unknown): string {
  const { resultType, ttlMs, cacheScope, _meta, ...rest } = result as Record<string, unknown>;
  return JSON.stringify(rest);
}

/** Each entry without what 2026-07-28 adds to a result: `_meta`, and a read's cache hints. */
function withoutMeta(entries: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(entries).map(([key, value]) => {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return [key, value];
      const { _meta, ttlMs, cacheScope, ...rest } = value as Record<string, unknown>;
      return [key, rest];
    }),
  );
}

describe('mcp-sandbox run --backend vm in both protocol eras', () => {
  it('a 2026-07-28 client (v2, pinned) gets the whole surface; a 2025-11-25 client gets the same', async () => {
    // Before, the app server (SDK v1 `Server`) answered server/discover with -32601 and the pinned
    // client failed to connect.
    const modern = await v2Surface('modern');
    const legacy = await v2Surface('legacy');
    expect(modern.version).toBe(MODERN);
    expect(legacy.version).toBe('2025-11-25');
    expect(modern.tools.map((t) => t.name)).toEqual(['hello', 'add', 'fail']);
    expect(JSON.stringify(modern.hello.content)).toContain('Howdy, Ada!');
    expect(modern.fail.isError).toBe(true);
    expect(JSON.stringify(modern.readme)).toContain('This app runs in a node:vm sandbox.');
    // 2026-07-28 results name the server in `_meta` (and a read carries cache hints); the rest is
    // the same in both eras.
    const { version: _m, ...modernRest } = modern;
    const { version: _l, ...legacyRest } = legacy;
    expect(JSON.stringify(modern.hello._meta)).toContain('mcp-sandbox-vm-app');
    expect(withoutMeta(modernRest)).toEqual(legacyRest);
  }, 60_000);

  it('the SDK v1 client (2025-11-25 only) gets what the v2 client gets in 2025-11-25', async () => {
    const { client } = await connect(RUN);
    let v1: Awaited<ReturnType<typeof surface>>;
    try {
      v1 = await surface(client);
    } finally {
      await client.close();
    }
    const { version, ...legacy } = await v2Surface('legacy');
    expect(version).toBe('2025-11-25');
    expect(v1).toEqual(legacy);
  }, 60_000);

  it('on the wire, each result is byte-identical across eras but for what 2026-07-28 adds', async () => {
    const modern = await exchange([
      modernRequest('discover', 'server/discover'),
      ...CALLS.map(([method, params], i) => modernRequest(i + 1, method, params)),
    ]);
    const legacy = await exchange([
      line({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
      line({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      ...CALLS.map(([method, params], i) => line({ jsonrpc: '2.0', id: i + 1, method, params })),
    ]);
    expect(modern.get('discover')?.result).toMatchObject({
      supportedVersions: [MODERN],
      capabilities: { tools: {}, resources: {}, prompts: {} },
    });
    expect(legacy.get('init')?.result).toMatchObject({ protocolVersion: '2025-11-25' });
    for (let id = 1; id <= CALLS.length; id++) {
      const m = modern.get(id)?.result as Record<string, unknown> | undefined;
      const l = legacy.get(id)?.result;
      expect(m, `${CALLS[id - 1]?.[0]} in 2026-07-28`).toBeDefined();
      expect(m?.resultType).toBe('complete');
      expect(eraFree(m)).toBe(JSON.stringify(l));
    }
  }, 60_000);

  it('inspect --backend vm names the era: protocol 2026-07-28 (server/discover)', async () => {
    const result = await spawnBin(['inspect', '--quiet', ...RUN]).result;
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toMatch(
      /^mcp-sandbox-vm-app 0\.0\.0 · protocol 2026-07-28 \(server\/discover\) · backend vm \(language\)\n/,
    );
    expect(result.stdout.toString()).toContain('tools (3)');
  }, 60_000);
});
