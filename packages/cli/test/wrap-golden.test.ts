import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURES, fixture, sandboxHome } from './helpers.js';

type Home = ReturnType<typeof sandboxHome>;

interface Case {
  readonly fixture: string;
  readonly client: string;
  readonly project?: boolean;
  /** Where the client reads the file, under the temp home or project folder. */
  readonly path: (h: Home) => string;
  /** The project folder as the client sees it (Claude Code keys local scope by it). */
  readonly cwd?: string;
  readonly extra?: readonly string[];
}

const CASES: readonly Case[] = [
  {
    fixture: 'claude-desktop',
    client: 'claude-desktop',
    path: (h) => join(h.home, '.config', 'Claude', 'claude_desktop_config.json'),
  },
  {
    fixture: 'claude-desktop-python',
    client: 'claude-desktop',
    path: (h) => join(h.home, '.config', 'Claude', 'claude_desktop_config.json'),
  },
  {
    fixture: 'claude-code-user',
    client: 'claude-code',
    path: (h) => join(h.home, '.claude.json'),
    cwd: '/home/dev/my-project',
    extra: ['--backend', 'local', '--ttl', '2h'],
  },
  {
    fixture: 'claude-code-project',
    client: 'claude-code',
    project: true,
    path: (h) => join(h.project, '.mcp.json'),
  },
  {
    fixture: 'cursor-project',
    client: 'cursor',
    project: true,
    path: (h) => join(h.project, '.cursor', 'mcp.json'),
    extra: ['--allow-net', 'api.example.com', '--env', 'EXTRA_KEY'],
  },
  {
    fixture: 'vscode-user',
    client: 'vscode',
    path: (h) => join(h.home, '.config', 'Code', 'User', 'mcp.json'),
  },
  {
    fixture: 'windsurf',
    client: 'windsurf',
    path: (h) => join(h.home, '.codeium', 'windsurf', 'mcp_config.json'),
    extra: ['--backend', 'fake'],
  },
];

const update = Boolean(process.env.UPDATE_GOLDEN);

let home: Home | undefined;
afterEach(() => home?.cleanup());

function target(c: Case) {
  return ['--client', c.client, ...(c.project ? ['--project'] : [])];
}

describe.each(CASES)('$fixture', (c) => {
  const original = fixture(`${c.fixture}/original.txt`);

  async function setUp() {
    home = sandboxHome();
    const file = c.path(home);
    home.put(file, original);
    return { h: home, file };
  }

  it('wrap writes the expected file, a backup of the original, and a diff on stderr', async () => {
    const { h, file } = await setUp();
    const result = await h.run(['wrap', ...target(c), '--all', ...(c.extra ?? [])], {}, c.cwd ?? h.project);
    expect(result.stderr).not.toMatch(/error/);
    expect(result.code).toBe(0);
    const wrapped = readFileSync(file, 'utf8');
    const golden = join(FIXTURES, c.fixture, 'wrapped.txt');
    if (update) writeFileSync(golden, wrapped);
    expect(existsSync(golden), `missing golden file ${golden} (run with UPDATE_GOLDEN=1 and review it)`).toBe(
      true,
    );
    expect(wrapped).toBe(readFileSync(golden, 'utf8'));
    expect(wrapped).not.toBe(original);
    const backups = h.backups(file);
    expect(backups).toHaveLength(1);
    expect(readFileSync(backups[0] as string, 'utf8')).toBe(original);
    expect(result.stderr).toContain(`--- ${file}`);
    expect(result.stderr).toMatch(/^\+.*mcp-sandbox/m);
    expect(result.stdout).toBe('');
    // Every sample has a remote entry and one sandboxed by hand: both are left alone, with a note.
    expect(result.stderr).toMatch(
      /: skipped \(remote \(URL\) entry: it runs nowhere on this machine\), left alone/,
    );
    expect(result.stderr).toMatch(
      /: skipped \(already sandboxed; wrap --update replaces its run options\), left alone/,
    );
  });

  it('unwrap after wrap gives back the original bytes', async () => {
    const { h, file } = await setUp();
    const cwd = c.cwd ?? h.project;
    const wrap = await h.run(['wrap', ...target(c), '--all', ...(c.extra ?? [])], {}, cwd);
    expect(wrap.code).toBe(0);
    // Only what wrap wrapped: entries that were sandboxed by hand stay as they are.
    const names = [...wrap.stderr.matchAll(/^mcp-sandbox: (.+?)(?: \(local scope\))?: wrapped/gm)].map(
      (m) => m[1],
    );
    expect(names.length).toBeGreaterThan(0);
    const result = await h.run(
      ['unwrap', ...target(c), ...names.flatMap((n) => ['--server', n as string])],
      {},
      cwd,
    );
    expect(result.stderr).toContain('restored from the backup');
    expect(result.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(original);
  });

  it('wrap twice changes nothing the second time', async () => {
    const { h, file } = await setUp();
    const cwd = c.cwd ?? h.project;
    await h.run(['wrap', ...target(c), '--all', ...(c.extra ?? [])], {}, cwd);
    const once = readFileSync(file, 'utf8');
    const again = await h.run(['wrap', ...target(c), '--all'], {}, cwd);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('already sandboxed');
    expect(again.stderr).toContain('nothing to change');
    expect(readFileSync(file, 'utf8')).toBe(once);
    expect(h.backups(file)).toHaveLength(1);
  });

  it('--dry-run prints the diff and writes nothing', async () => {
    const { h, file } = await setUp();
    const before = statSync(file).mtimeMs;
    const result = await h.run(
      ['wrap', ...target(c), '--all', '--dry-run', ...(c.extra ?? [])],
      {},
      c.cwd ?? h.project,
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^\+.*mcp-sandbox/m);
    expect(result.stderr).toContain('dry run');
    expect(readFileSync(file, 'utf8')).toBe(original);
    expect(statSync(file).mtimeMs).toBe(before);
    expect(h.backups(file)).toHaveLength(0);
  });
});
