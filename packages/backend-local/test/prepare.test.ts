/**
 * `npx -y <pkg>`: installed inside the sandbox with egress to the registry only, into a
 * persistent cache; a warm cache starts with no network at all.
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxEvent } from '@mcpsandbox/core';
import { parseNpxCommand } from '@mcpsandbox/host-side';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../src/index.js';
import { SandboxProcessTransport } from './sdk-transport.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'mcpsandbox-npx-cache-'));
// As root the sandbox runs as nobody, who must be able to enter the cache.
chmodSync(cacheDir, 0o755);
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

const SPEC = '@modelcontextprotocol/server-everything@2026.8.31';

async function startAndList(events: SandboxEvent[], progress: string[]): Promise<number> {
  const box = await createLocalBackend({ npmCacheDir: cacheDir }).create({
    sessionId: 'npx',
    env: {},
    ttlMs: 170_000,
    onEvent: (event) => events.push(event),
  });
  try {
    const command = await box.prepare!(['npx', '-y', SPEC, 'stdio'], {
      stderr: (chunk) => progress.push(Buffer.from(chunk).toString()),
    });
    expect(command[0]).toMatch(
      /^\/run\/mcp-sandbox\/npm\/[0-9a-f]{24}\/node_modules\/\.bin\/mcp-server-everything$/,
    );
    expect(command.slice(1)).toEqual(['stdio']);
    const proc = await box.exec(command);
    const client = new Client({ name: 'prepare-test', version: '0.0.0' }, { capabilities: {} });
    await client.connect(new SandboxProcessTransport(proc));
    const { tools } = await client.listTools();
    await client.close();
    return tools.length;
  } finally {
    await box.close();
  }
}

describe('npx -y through prepare()', () => {
  it('installs once with registry-only egress, then starts from the cache offline', {
    timeout: 170_000,
  }, async () => {
    const cold: SandboxEvent[] = [];
    const progress: string[] = [];
    expect(await startAndList(cold, progress)).toBe(13);
    expect(cold).toContainEqual(expect.objectContaining({ type: 'prepare', cache: 'miss' }));
    expect(cold).toContainEqual(expect.objectContaining({ type: 'prepare', cache: 'stored' }));
    const proxied = cold.filter((event) => event.type === 'proxy');
    expect(proxied.length).toBeGreaterThan(0);
    // Every connection the install made went to the registry it was granted, and nothing else.
    const miss = cold.find((event) => event.cache === 'miss');
    const registryHost = String((miss?.network as string[] | undefined)?.[0]).split(':')[0];
    for (const event of proxied) expect(event).toMatchObject({ decision: 'allow', host: registryHost });
    // npm's own output is the install's; mcp-sandbox's "installing …" line goes to its logger.
    expect(progress.join('')).toMatch(/added \d+ packages/);
    expect(progress.join('')).not.toContain('mcp-sandbox: installing');
    // One entry (the host npm's settings are kept beside the entries, in npm-config.json).
    expect(readdirSync(cacheDir).filter((name) => /^[0-9a-f]{24}$/.test(name))).toHaveLength(1);
    expect(readdirSync(cacheDir)).toContain('npm-config.json');

    const warm: SandboxEvent[] = [];
    expect(await startAndList(warm, [])).toBe(13);
    expect(warm).toContainEqual(expect.objectContaining({ type: 'prepare', cache: 'hit' }));
    expect(warm.filter((event) => event.type === 'proxy')).toEqual([]);
    expect(warm.filter((event) => event.cache === 'miss')).toEqual([]);
  });
});

describe('parseNpxCommand', () => {
  it('takes npx -y and npx --yes, with the arguments after the package', () => {
    expect(parseNpxCommand(['npx', '-y', 'pkg@1', 'a', '--b'])).toEqual({
      spec: 'pkg@1',
      args: ['a', '--b'],
    });
    expect(parseNpxCommand(['/usr/bin/npx', '--yes', '@s/p', '--', 'x'])).toEqual({
      spec: '@s/p',
      args: ['x'],
    });
  });

  it('leaves everything else alone', () => {
    expect(parseNpxCommand(['npx', 'pkg'])).toBeUndefined();
    expect(parseNpxCommand(['npx', '-y', '--package', 'x', 'y'])).toBeUndefined();
    expect(parseNpxCommand(['node', 'server.js'])).toBeUndefined();
    expect(parseNpxCommand(['npx', '-y'])).toBeUndefined();
  });
});
