/**
 * Real servers still work under the allowlist filter: each is installed from the npm registry by
 * the sandbox's own install step (`run -- npx -y <pkg>@<version>`) and lists its tools to the
 * real SDK client, through the built binary. The first run installs (slow); later runs use the
 * install cache. A call that a server needs and the filter refuses shows up here first.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, openTempDir } from './binary.js';

const data = openTempDir('mcpsandbox-servers-');
afterAll(() => {
  rmSync(data, { recursive: true, force: true });
});

interface Case {
  readonly pkg: string;
  readonly runArgs?: readonly string[];
  readonly serverArgs?: readonly string[];
  /** A tool the server lists. */
  readonly tool: string;
  /** A name for the case other than the package (the same package run another way). */
  readonly name?: string;
  /** More environment for the binary (an install cache of its own). */
  readonly env?: Readonly<Record<string, string>>;
  /** What mcp-sandbox must say on stderr. */
  readonly says?: RegExp;
}

/** ssh-mcp: ssh2 has an optional native dependency (cpu-features) built from source at install. */
const SSH_MCP = 'ssh-mcp@2.11.0';
const SSH_ARGS = ['--', '--host=127.0.0.1', '--user=nobody'];

const SERVERS: readonly Case[] = [
  { pkg: '@modelcontextprotocol/server-everything@2026.8.31', serverArgs: ['stdio'], tool: 'echo' },
  { pkg: '@modelcontextprotocol/server-memory@2026.8.31', tool: 'create_entities' },
  {
    pkg: '@modelcontextprotocol/server-filesystem@2026.8.31',
    runArgs: ['--mount', `${data}:/mnt/data`],
    serverArgs: ['/mnt/data'],
    tool: 'list_directory',
  },
  { pkg: '@modelcontextprotocol/server-sequential-thinking@2026.8.31', tool: 'sequentialthinking' },
  { pkg: '@playwright/mcp@0.0.83', tool: 'browser_navigate' },
  { pkg: 'chrome-devtools-mcp@1.11.0', tool: 'navigate_page' },
  { pkg: SSH_MCP, serverArgs: SSH_ARGS, tool: 'list-connections' },
  {
    // Where the optional build cannot succeed (no headers to build against, none to download),
    // npm skips it and the server works without it: so does the sandboxed install.
    name: `${SSH_MCP}, its optional native build failing`,
    pkg: SSH_MCP,
    runArgs: ['--install-env', 'npm_config_nodedir=/nonexistent'],
    serverArgs: SSH_ARGS,
    env: { XDG_CACHE_HOME: join(data, 'ssh-cache'), XDG_STATE_HOME: join(data, 'ssh-state') },
    says: /skipped the optional dependency cpu-features: its install script failed/,
    tool: 'list-connections',
  },
];

async function connect(item: Case) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'run', ...(item.runArgs ?? []), '--', 'npx', '-y', item.pkg, ...(item.serverArgs ?? [])],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...item.env },
    // Run outside the repository, so that npx cannot find a workspace copy.
    cwd: data,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'real-servers-test', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport, { timeout: 200_000 });
  } catch (error) {
    throw new Error(`${item.pkg} did not start: ${(error as Error).message}\n${stderr}`);
  }
  return { client, stderr: () => stderr };
}

describe('real servers list their tools under the allowlist filter', () => {
  for (const item of SERVERS) {
    it(item.name ?? item.pkg, { timeout: 240_000 }, async () => {
      const { client, stderr } = await connect(item);
      try {
        const { tools } = await client.listTools(undefined, { timeout: 30_000 });
        const names = tools.map((tool) => tool.name);
        expect(names, stderr()).toContain(item.tool);
        if (item.says) expect(stderr()).toMatch(item.says);
        if (item.pkg.startsWith('@modelcontextprotocol/server-filesystem')) {
          // The mount is there and readable through the server.
          writeFileSync(join(data, 'planted.txt'), 'hello');
          const listing = await client.callTool({ name: 'list_directory', arguments: { path: '/mnt/data' } });
          expect(JSON.stringify(listing.content)).toContain('planted.txt');
        }
      } finally {
        await client.close();
      }
    });
  }
});
