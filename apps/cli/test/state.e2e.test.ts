import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, spawnBin } from './helpers.js';

// server-memory keeps memory.jsonl next to its own code: in the read-only install cache that
// was EROFS. It now gets a writable copy of its package, kept across sessions with --state.
const MEMORY = ['npx', '-y', '@modelcontextprotocol/server-memory@2026.8.31'];
const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-state-e2e-'));
// As root the sandbox runs as another user, who must be able to pass through to the state.
chmodSync(dir, 0o711);
const stateRoot = join(dir, 'state');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const options = (...extra: string[]) => [
  '--backend-option',
  `stateRoot=${stateRoot}`,
  ...extra,
  '--',
  ...MEMORY,
];
const text = (result: unknown) =>
  ((result as { content: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? '').join('\n');

/** A digest of a tree, links read as links, never followed. */
function treeDigest(root: string): string {
  const hash = createHash('sha256');
  const visit = (path: string, rel: string) => {
    const stat = lstatSync(path);
    hash.update(`${rel}\0${stat.mode}\0`);
    if (stat.isSymbolicLink()) hash.update(readlinkSync(path));
    else if (stat.isDirectory())
      for (const name of readdirSync(path).sort()) visit(join(path, name), `${rel}/${name}`);
    else if (stat.isFile()) hash.update(readFileSync(path));
  };
  visit(root, '');
  return hash.digest('hex');
}

function cacheEntryOf(trace: string): string {
  for (const line of readFileSync(trace, 'utf8').split('\n')) {
    if (!line) continue;
    const record = JSON.parse(line) as { type?: string; entry?: string };
    if (record.type === 'sandbox.prepare' && record.entry) return record.entry;
  }
  throw new Error('no prepare record in the trace');
}

async function session(
  args: string[],
  body: (call: (name: string, a: object) => Promise<string>) => Promise<void>,
  env: Record<string, string> = {},
) {
  const { client } = await connect(args, env);
  try {
    await body(async (name, a) =>
      text(await client.callTool({ name, arguments: a as Record<string, unknown> })),
    );
  } finally {
    await client.close();
  }
}

describe('server-memory on the local backend: writes next to its code, kept with --state', () => {
  it('keeps an entity across sessions with --state, leaves the cache byte-identical, and forgets without it', async () => {
    const trace = join(dir, 'first.jsonl');
    await session(options('--state', 'memory', '--trace', trace), async (call) => {
      expect(
        await call('create_entities', {
          entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }],
        }),
      ).toContain('Ada');
    });
    const entry = cacheEntryOf(trace);
    const before = treeDigest(entry);

    await session(options('--state', 'memory'), async (call) => {
      expect(await call('read_graph', {})).toContain('wrote the first program');
    });
    // Without --state the writes live as long as the session: a fresh, writable, empty memory.
    await session(options(), async (call) => {
      expect(await call('read_graph', {})).not.toContain('Ada');
      expect(
        await call('create_entities', {
          entities: [{ name: 'Bob', entityType: 'person', observations: [] }],
        }),
      ).toContain('Bob');
    });
    await session(options('--state', 'memory'), async (call) => {
      const graph = await call('read_graph', {});
      expect(graph).toContain('Ada');
      expect(graph).not.toContain('Bob');
    });
    expect(treeDigest(entry)).toBe(before);
  }, 240_000);

  it('state ls lists it and state rm removes it: the next session starts empty', async () => {
    // The store `state` reads is the one the backend writes by default: under XDG_STATE_HOME.
    const xdg = join(dir, 'xdg');
    const root = join(xdg, 'mcp-sandbox', 'state');
    const env = { ...process.env, XDG_STATE_HOME: xdg };
    await session(
      ['--state', 'notes', '--', ...MEMORY],
      async (call) => {
        await call('create_entities', { entities: [{ name: 'Cy', entityType: 'x', observations: [] }] });
      },
      { XDG_STATE_HOME: xdg },
    );
    const ls = await spawnBin(['state', 'ls'], env).result;
    expect(ls.code).toBe(0);
    expect(ls.stdout.toString()).toContain(root);
    expect(ls.stdout.toString()).toMatch(/^notes\s/m);
    const rm = await spawnBin(['state', 'rm', 'notes'], env).result;
    expect(rm.code).toBe(0);
    expect(rm.stderr).toContain('removed state notes');
    const again = await spawnBin(['state', 'rm', 'notes'], env).result;
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no state named notes');
    await session(
      ['--state', 'notes', '--', ...MEMORY],
      async (call) => {
        expect(await call('read_graph', {})).not.toContain('Cy');
      },
      { XDG_STATE_HOME: xdg },
    );
  }, 120_000);

  it('refuses a state name that is a path, before starting anything', async () => {
    const result = await spawnBin(['run', '--state', '../x', '--', 'cat']).result;
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('a state name is');
  });
});
