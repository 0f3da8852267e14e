import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin, traceRecords } from './helpers.js';
import { connectV2, modernRequest, V2_SERVER } from './v2-helpers.js';

// --allow-tool / --deny-tool / --pin-tools hold for 2026-07-28 sessions (server/discover, `_meta`
// on each request), written from the attacker's side: a tool the policy refuses is never listed or
// run, whatever the era, the id form or the answer that names it.

const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-eras-policy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const textOf = (result: unknown) => JSON.stringify(result);

describe('tool policy in 2026-07-28 sessions', () => {
  it('a denied tool is hidden from a 2026-07-28 list and its call never reaches the server', async () => {
    const trace = join(dir, 'deny.jsonl');
    const run = ['--backend', 'none', '--deny-tool', 'secret-*', '--trace', trace, '--', 'node', V2_SERVER];
    const { client } = await connectV2({ run: true, args: run }, 'modern');
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(['echo', 'add']);
      await expect(client.callTool({ name: 'secret-admin', arguments: {} })).rejects.toThrow(
        /not allowed by this session's policy \(deny secret-\*\)/,
      );
      // Control: an allowed call in the same session runs.
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'ok' } }))).toContain(
        'echo: ok',
      );
    } finally {
      await client.close();
    }
    const records = traceRecords(trace);
    expect(records.some((r) => JSON.stringify(r).includes('ADMIN-TOOL-RAN'))).toBe(false);
    expect(records.filter((r) => r.type === 'policy').map((r) => r.action)).toEqual(['hidden', 'refused']);
    // `trace` names the era and summarises the session like any other.
    const summary = (await spawnBin(['trace', trace]).result).stdout.toString();
    expect(summary).toContain('protocol: 2026-07-28 (server/discover, no initialize)');
    expect(summary).toMatch(/methods: .*server\/discover 1/);
    expect(summary).toContain('refused secret-admin');
  });

  it('raw 2026-07-28 calls to a denied tool are refused for every id form', async () => {
    const ids: Array<string | number> = ['server-discover-probe-9', 7, 'x'];
    const lines = [
      modernRequest('d', 'server/discover'),
      ...ids.map((id) => modernRequest(id, 'tools/call', { name: 'secret-admin', arguments: {} })),
      modernRequest('control', 'tools/call', { name: 'echo', arguments: { text: 'control' } }),
    ];
    const child = spawnBin([
      'run',
      '--backend',
      'none',
      '--quiet',
      '--deny-tool',
      'secret-*',
      '--',
      'node',
      V2_SERVER,
    ]);
    child.child.stdin.end(lines.join(''));
    const out = (await child.result).stdout.toString();
    expect(out).not.toContain('ADMIN-TOOL-RAN');
    for (const id of ids)
      expect(out).toContain(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":{"code":-32003`);
    expect(out).toContain('echo: control');
  });

  it('with --pin-tools-strict, a tool added after pinning cannot be called unlisted by a 2026-07-28 client', async () => {
    // A 2026-07-28 client may call without listing (its list came from a cache, `ttlMs`), so the
    // bridge never reviews the new tool. Before the fix the call ran: "EXTRA-TOOL-RAN backdoor".
    const pins = join(dir, 'pins.json');
    const run = (strict: boolean) => [
      '--backend',
      'none',
      '--pin-tools',
      pins,
      ...(strict ? ['--env', 'EXTRA_TOOL', '--pin-tools-strict'] : []),
      '--',
      'node',
      V2_SERVER,
    ];
    const first = await connectV2({ run: true, args: run(false) }, 'modern');
    try {
      expect((await first.client.listTools()).tools).toHaveLength(3);
    } finally {
      await first.client.close();
    }
    const later = await connectV2({ run: true, args: run(true) }, 'modern', { EXTRA_TOOL: 'backdoor' });
    try {
      await expect(later.client.callTool({ name: 'backdoor', arguments: {} })).rejects.toThrow(
        /not allowed by this session's policy \(pin-tools-strict\)/,
      );
      // Control: a pinned tool still runs, listed or not.
      expect(textOf(await later.client.callTool({ name: 'echo', arguments: { text: 'p' } }))).toContain(
        'echo: p',
      );
    } finally {
      await later.client.close();
    }
  });

  it('a denied tool named in a server/discover result is hidden too', async () => {
    // A hostile server lists tools where 2026-07-28 has none: in its discover result. Before the
    // fix the line reached the client as it was, "secret-admin" and all.
    const server = `process.stdin.on('data', (d) => { for (const line of String(d).split('\\n').filter(Boolean)) {
      const m = JSON.parse(line);
      process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { supportedVersions: ['2026-07-28'],
        capabilities: { tools: {} }, resultType: 'complete',
        tools: [{ name: 'secret-admin', inputSchema: { type: 'object' } }, { name: 'echo', inputSchema: { type: 'object' } }] } }) + '\\n');
    } });`;
    const child = spawnBin([
      'run',
      '--backend',
      'none',
      '--quiet',
      '--deny-tool',
      'secret-*',
      '--',
      'node',
      '-e',
      server,
    ]);
    child.child.stdin.end(modernRequest('probe', 'server/discover'));
    const out = (await child.result).stdout.toString();
    // Control: the discover answer came through, with the allowed tool.
    expect(out).toContain('"supportedVersions":["2026-07-28"]');
    expect(out).toContain('"name":"echo"');
    expect(out).not.toContain('secret-admin');
  });
});
