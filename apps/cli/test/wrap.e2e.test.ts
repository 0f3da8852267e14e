import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, EVERYTHING, spawnBin } from './helpers.js';

const require = createRequire(import.meta.url);
const FILESYSTEM = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
// The server's own files live in this repository, which CI may clone under a hidden /tmp.
const REPO = fileURLToPath(new URL('../../..', import.meta.url));

const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-wrap-e2e-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Entry {
  command: string;
  args: string[];
  env?: Record<string, string>;
}

/** Starts an entry exactly as a client does: its command, args and env over the client's default. */
async function start(entry: Entry): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: entry.command,
    args: entry.args,
    env: { ...getDefaultEnvironment(), ...entry.env },
    cwd: root,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'wrap-e2e', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const text = (result: unknown) =>
  ((result as { content: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? '').join('\n');

describe('a wrapped filesystem server sees the folder its config names (local backend)', () => {
  const notes = join(root, 'notes');
  mkdirSync(notes);
  writeFileSync(join(notes, 'todo.md'), 'buy milk\n');
  const config = join(root, 'claude_desktop_config.json');
  writeFileSync(
    config,
    `${JSON.stringify({ mcpServers: { notes: { command: 'node', args: [FILESYSTEM, notes] } } }, null, 2)}\n`,
  );

  // Before, wrap left the folder hidden: the server exited with "None of the specified directories
  // are accessible". The control below shows exactly that without the mount wrap now adds.
  it('control: without the mount, the server cannot see the folder', async () => {
    const result = await spawnBin(['run', '--mount', `${REPO}:ro`, '--', 'node', FILESYSTEM, notes]).result;
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/accessible|ENOENT|no such file/i);
  });

  it('wrap mounts it read-only; the wrapped entry lists, reads, and cannot write', async () => {
    const wrapped = await spawnBin([
      'wrap',
      '--client',
      'claude-desktop',
      '--config',
      config,
      '--all',
      '--mount',
      `${REPO}:ro`,
    ]).result;
    expect(wrapped.code).toBe(0);
    expect(wrapped.stderr).toContain(`${notes}:${notes}:ro`);
    expect(wrapped.stderr).toContain(`notes: mounts ${REPO.replace(/\/$/, '')} (ro), ${notes} (ro)`);
    const entry = (JSON.parse(readFileSync(config, 'utf8')) as { mcpServers: { notes: Entry } }).mcpServers
      .notes;
    const { client, stderr } = await start(entry);
    try {
      const listed = await client.callTool({ name: 'list_allowed_directories', arguments: {} });
      expect(text(listed)).toContain(notes);
      const read = await client.callTool({
        name: 'read_text_file',
        arguments: { path: join(notes, 'todo.md') },
      });
      expect(text(read)).toContain('buy milk');
      const write = await client.callTool({
        name: 'write_file',
        arguments: { path: join(notes, 'new.md'), content: 'x' },
      });
      expect(write.isError).toBe(true);
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('backend local, isolation os');
    expect(readFileSync(join(notes, 'todo.md'), 'utf8')).toBe('buy milk\n');
  });
});

describe('every entry a source build wraps starts, as the client starts it', () => {
  it('the launcher is this build by its absolute path (npm has no such version), said on stderr', async () => {
    const config = join(root, 'every.json');
    writeFileSync(
      config,
      `${JSON.stringify(
        {
          mcpServers: {
            everything: { command: 'node', args: [EVERYTHING, 'stdio'], env: { GREETING: 'hi' } },
            memory: { command: 'node', args: [EVERYTHING] },
          },
        },
        null,
        2,
      )}\n`,
    );
    const wrapped = await spawnBin([
      'wrap',
      '--client',
      'claude-desktop',
      '--config',
      config,
      '--all',
      '--mount',
      `${REPO}:ro`,
    ]).result;
    expect(wrapped.code).toBe(0);
    expect(wrapped.stderr).toContain('was not installed from a registry');
    const entries = (JSON.parse(readFileSync(config, 'utf8')) as { mcpServers: Record<string, Entry> })
      .mcpServers;
    for (const [name, entry] of Object.entries(entries)) {
      expect(entry.command, name).toBe(process.execPath);
      expect(entry.args.slice(0, 3), name).toEqual([BIN, 'run', '--wrapped']);
      const { client, stderr } = await start(entry);
      try {
        expect((await client.listTools()).tools.length, name).toBeGreaterThan(0);
      } finally {
        await client.close();
      }
      expect(stderr()).toContain('backend local, isolation os');
    }
    // An update keeps the launcher the entries have.
    const update = await spawnBin([
      'wrap',
      '--client',
      'claude-desktop',
      '--config',
      config,
      '--all',
      '--update',
      '--ttl',
      '1h',
    ]).result;
    expect(update.code).toBe(0);
    const after = (JSON.parse(readFileSync(config, 'utf8')) as { mcpServers: Record<string, Entry> })
      .mcpServers;
    expect(after.everything?.command).toBe(process.execPath);
    expect(after.everything?.args).toContain('1h');
  }, 120_000);
});
