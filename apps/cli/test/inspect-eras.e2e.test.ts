import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EVERYTHING, spawnBin } from './helpers.js';
import { MODERN, V2_SERVER } from './v2-helpers.js';

// `inspect` opens with the v2 client: a `server/discover` probe, then `initialize` when the server
// shows no 2026-07-28 support. Servers of each kind, through the built binary.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const STRICT_LEGACY = fileURLToPath(new URL('./fixtures/strict-legacy-server.mjs', import.meta.url));
const SLOW_V2 = fileURLToPath(new URL('./fixtures/slow-v2-server.mjs', import.meta.url));
const env = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ...extra,
});

async function inspectJson(args: string[], extra: Record<string, string> = {}) {
  const { report } = await inspectWithStderr(args, extra);
  return report;
}

async function inspectWithStderr(args: string[], extra: Record<string, string> = {}) {
  const result = await spawnBin(['inspect', '--json', '--quiet', ...args], env(extra)).result;
  // --quiet leaves the warning of --backend none and what the server itself wrote.
  const server = result.stderr.split('\n').filter((l) => l.startsWith('[sandbox] '));
  const ours = result.stderr.split('\n').filter((l) => l && !l.startsWith('[sandbox] '));
  expect(ours.filter((l) => !l.includes('NOT sandboxed'))).toEqual([]);
  expect(result.code).toBe(0);
  return { report: parseReport(result.stdout.toString()), server };
}

function parseReport(text: string) {
  return JSON.parse(text) as Record<string, unknown> & {
    tools: Array<{ name: string; required: string[] }>;
    resources: Array<{ uri: string }>;
    prompts: Array<{ name: string; arguments: string[] }>;
  };
}

const names = (list: Array<{ name: string }>) => list.map((t) => t.name);

describe('mcp-sandbox inspect and the protocol eras', () => {
  it('lists a 2026-07-28-only server in the real OS sandbox, with the era in the header and in JSON', async () => {
    // Before, inspect's 2025 client sent `initialize`, which this server refuses with -32022.
    const args = ['--mount', `${REPO}:ro`, '--env', 'MCP_ERA', '--', 'node', V2_SERVER];
    const text = await spawnBin(['inspect', '--quiet', ...args], env({ MCP_ERA: 'modern' })).result;
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout.toString()).toMatch(
      /^v2-fixture 1\.0\.0 · protocol 2026-07-28 \(server\/discover\) · backend local \(os\)\n/,
    );
    const report = await inspectJson(args, { MCP_ERA: 'modern' });
    expect(report).toMatchObject({
      server: { name: 'v2-fixture', version: '1.0.0' },
      protocolVersion: MODERN,
      era: 'modern',
      handshake: 'server/discover',
      instructions: 'A fixture for protocol-era tests.',
      backend: 'local',
    });
    expect(names(report.tools)).toEqual(['echo', 'add', 'secret-admin']);
    expect(report.tools[0]?.required).toEqual(['text']);
    expect(report.resources.map((r) => r.uri)).toEqual(['fixture://readme']);
    expect(report.prompts).toEqual([
      { name: 'greeting', description: 'Greets someone', arguments: ['name*'] },
    ]);
  });

  it('a server that speaks both eras is opened in 2026-07-28 and lists the same surface', async () => {
    const args = ['--backend', 'none', '--env', 'MCP_ERA', '--', 'node', V2_SERVER];
    const both = await inspectJson(args, { MCP_ERA: 'both' });
    const modern = await inspectJson(args, { MCP_ERA: 'modern' });
    expect(both.era).toBe('modern');
    expect(both).toEqual(modern);
  });

  it('a 2025-11-25 server (SDK v1) is opened with initialize after the probe, on the same pipe', async () => {
    const report = await inspectJson(['--backend', 'none', '--', process.execPath, EVERYTHING]);
    expect(report).toMatchObject({
      server: { name: 'mcp-servers/everything' },
      protocolVersion: '2025-11-25',
      era: 'legacy',
      handshake: 'initialize',
    });
    expect(report.tools).toHaveLength(13);
    const text = await spawnBin([
      'inspect',
      '--quiet',
      '--backend',
      'none',
      '--',
      process.execPath,
      EVERYTHING,
    ]).result;
    expect(text.stdout.toString()).toMatch(/ · protocol 2025-11-25 \(initialize\) · backend none \(none\)\n/);
  });

  it('a 2025 server that exits on the probe is opened again with initialize, in a fresh sandbox', async () => {
    const { report, server } = await inspectWithStderr([
      '--mount',
      `${REPO}:ro`,
      '--',
      'node',
      STRICT_LEGACY,
    ]);
    // The first sandbox's server ended on the probe; the second one was opened with initialize.
    expect(server).toEqual(['[sandbox] strict-legacy: server/discover before initialize; exiting']);
    expect(report).toMatchObject({
      server: { name: 'strict-legacy' },
      era: 'legacy',
      handshake: 'initialize',
    });
    expect(names(report.tools)).toEqual(['only-after-initialize']);
  });

  it('control: that server really exits on the probe (exit 3), as a 2026-07-28-only client sees', async () => {
    const run = spawnBin(['run', '--quiet', '--backend', 'none', '--', 'node', STRICT_LEGACY], env());
    run.child.stdin.end(
      `${JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'server/discover', params: {} })}\n`,
    );
    const result = await run.result;
    expect(result.code).toBe(3);
    // The bridge answers the request the server left in flight; the server itself answered nothing.
    const answer = JSON.parse(result.stdout.toString()) as { id: string; result?: unknown; error?: unknown };
    expect(answer.id).toBe('p');
    expect(answer.result).toBeUndefined();
    expect(answer.error).toBeDefined();
    expect(result.stderr).toContain('server/discover before initialize; exiting');
  });

  it('a 2026-07-28-only server slower to start than the probe is opened again with server/discover', async () => {
    // The probe waits half of --timeout (3s here); the server reads nothing for 3.5s, then refuses
    // the fallback `initialize` with -32022 naming 2026-07-28.
    const report = await inspectJson(
      [
        '--timeout',
        '6s',
        '--backend',
        'none',
        '--env',
        'MCP_ERA',
        '--env',
        'SLOW_START_MS',
        '--',
        'node',
        SLOW_V2,
      ],
      { MCP_ERA: 'modern', SLOW_START_MS: '3500' },
    );
    expect(report).toMatchObject({ protocolVersion: MODERN, handshake: 'server/discover' });
    expect(names(report.tools)).toEqual(['echo', 'add', 'secret-admin']);
  }, 30_000);

  it('applies the tool policy to a 2026-07-28 listing as run does', async () => {
    const report = await inspectJson(
      ['--backend', 'none', '--deny-tool', 'secret-*', '--env', 'MCP_ERA', '--', 'node', V2_SERVER],
      { MCP_ERA: 'modern' },
    );
    expect(names(report.tools)).toEqual(['echo', 'add']);
  });
});
