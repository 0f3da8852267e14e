import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { maskSecrets } from '../src/commands/ls-action.js';
import { locateConfig } from '../src/config/clients.js';
import { unifiedDiff } from '../src/config/diff.js';
import { JsonSyntaxError, parseJsonDocument, toValue } from '../src/config/jsonc.js';
import { parseWrapped } from '../src/config/servers.js';

/** A small seeded generator, so a failure can be replayed. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomValue(r: () => number, depth = 0): unknown {
  const pick = Math.floor(r() * (depth > 3 ? 4 : 6));
  switch (pick) {
    case 0:
      return Math.floor(r() * 2000 - 1000) / (r() < 0.5 ? 1 : 8);
    case 1: {
      const chars = ['a', 'é', '"', '\\', '\n', '\u0001', '😀', '/', ' ', 'z'];
      return Array.from({ length: Math.floor(r() * 6) }, () => chars[Math.floor(r() * chars.length)]).join(
        '',
      );
    }
    case 2:
      return r() < 0.5;
    case 3:
      return null;
    case 4:
      return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: Math.floor(r() * 4) }, (_, i) => [
          `k${i}${r() < 0.3 ? '"' : ''}`,
          randomValue(r, depth + 1),
        ]),
      );
  }
}

function jsonParses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

describe('the JSON parser', () => {
  it('agrees with JSON.parse on valid documents in any layout, and on thousands of broken ones', () => {
    const r = rng(42);
    let rejected = 0;
    for (let i = 0; i < 1500; i++) {
      const value = randomValue(r);
      const text = JSON.stringify(value, null, r() < 0.5 ? 2 : undefined) ?? 'null';
      expect(toValue(parseJsonDocument(text, { comments: false }))).toEqual(JSON.parse(text));
      // Break it: drop, duplicate or replace one character.
      const at = Math.floor(r() * text.length);
      const junk = ['', ',', '}', ']', '"', ':', '/', 'x', '0', ' '][Math.floor(r() * 10)] as string;
      const broken = text.slice(0, at) + junk + text.slice(at + (r() < 0.5 ? 1 : 0));
      let ours = true;
      try {
        parseJsonDocument(broken, { comments: false });
      } catch (error) {
        expect(error).toBeInstanceOf(JsonSyntaxError);
        ours = false;
      }
      expect(ours, broken).toBe(jsonParses(broken));
      if (!ours) rejected++;
    }
    expect(rejected).toBeGreaterThan(500);
  });

  it('reads JSONC where asked: comments and trailing commas, and keeps offsets of values', () => {
    const text = '// head\n{ /* a */ "a": [1, 2,], // x\n "b": "c", }\n';
    const root = parseJsonDocument(text, { comments: true });
    expect(toValue(root)).toEqual({ a: [1, 2], b: 'c' });
    if (root.kind !== 'object') throw new Error('object expected');
    const b = root.properties[1]?.value;
    expect(b && text.slice(b.start, b.end)).toBe('"c"');
    expect(() => parseJsonDocument(text, { comments: false })).toThrow(
      /line 1, column 1: comments are not allowed/,
    );
    expect(() => parseJsonDocument('{"a": 1 /* open', { comments: true })).toThrow(
      /unterminated block comment/,
    );
  });

  it('duplicate keys: the last one wins, as in JSON.parse', () => {
    expect(toValue(parseJsonDocument('{"a":1,"a":2}', { comments: false }))).toEqual({ a: 2 });
    expect(toValue(parseJsonDocument('{"__proto__": {"x": 1}}', { comments: false }))).toEqual(
      JSON.parse('{"__proto__": {"x": 1}}'),
    );
  });
});

describe('the unified diff', () => {
  it('patch(1) turns the old text into the new one, for random edits of a long file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-diff-'));
    try {
      const r = rng(7);
      for (let round = 0; round < 25; round++) {
        const lines = Array.from({ length: 200 }, (_, i) => `line ${i % 17} ${Math.floor(r() * 5)}`);
        const changed = [...lines];
        for (let e = 0; e < 1 + Math.floor(r() * 6); e++) {
          const at = Math.floor(r() * changed.length);
          const kind = r();
          if (kind < 0.33) changed.splice(at, 1);
          else if (kind < 0.66) changed.splice(at, 0, `inserted ${e}`);
          else changed[at] = `replaced ${e}`;
        }
        const a = `${lines.join('\n')}\n`;
        const b = `${changed.join('\n')}${r() < 0.2 ? '' : '\n'}`;
        writeFileSync(join(dir, 'file'), a);
        writeFileSync(join(dir, 'patch'), unifiedDiff(a, b, 'file', 'file'));
        execFileSync('patch', ['-s', '-p0', join(dir, 'file'), join(dir, 'patch')]);
        expect(readFileSync(join(dir, 'file'), 'utf8')).toBe(b);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is empty for equal texts and shows context around a change', () => {
    expect(unifiedDiff('a\n', 'a\n', 'x', 'y')).toBe('');
    expect(unifiedDiff('1\n2\n3\n4\n5\n6\n7\n8\n9\n', '1\n2\n3\n4\nfive\n6\n7\n8\n9\n', 'x', 'y')).toBe(
      '--- x\n+++ y\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n',
    );
  });
});

describe('config locations per client and OS', () => {
  const linux = { platform: 'linux', env: { HOME: '/home/u' }, cwd: '/work/app' };
  const mac = { platform: 'darwin', env: { HOME: '/Users/u' }, cwd: '/Users/u/app' };
  const win = {
    platform: 'win32',
    env: { USERPROFILE: 'C:\\Users\\u', APPDATA: 'C:\\Users\\u\\AppData\\Roaming' },
    cwd: 'C:\\src\\app',
  };
  it.each([
    ['claude-desktop', false, linux, '/home/u/.config/Claude/claude_desktop_config.json'],
    ['claude-desktop', false, mac, '/Users/u/Library/Application Support/Claude/claude_desktop_config.json'],
    ['claude-desktop', false, win, 'C:\\Users\\u\\AppData\\Roaming\\Claude\\claude_desktop_config.json'],
    ['claude-code', false, linux, '/home/u/.claude.json'],
    ['claude-code', false, win, 'C:\\Users\\u\\.claude.json'],
    ['claude-code', true, mac, '/Users/u/app/.mcp.json'],
    ['cursor', false, mac, '/Users/u/.cursor/mcp.json'],
    ['cursor', false, win, 'C:\\Users\\u\\.cursor\\mcp.json'],
    ['cursor', true, linux, '/work/app/.cursor/mcp.json'],
    ['vscode', false, linux, '/home/u/.config/Code/User/mcp.json'],
    ['vscode', false, mac, '/Users/u/Library/Application Support/Code/User/mcp.json'],
    ['vscode', false, win, 'C:\\Users\\u\\AppData\\Roaming\\Code\\User\\mcp.json'],
    ['vscode', true, win, 'C:\\src\\app\\.vscode\\mcp.json'],
    ['windsurf', false, linux, '/home/u/.codeium/windsurf/mcp_config.json'],
    ['windsurf', false, win, 'C:\\Users\\u\\.codeium\\windsurf\\mcp_config.json'],
  ] as const)('%s (project: %s) on %o', (client, project, ctx, expected) => {
    expect(locateConfig(client, project, ctx).file).toBe(expected);
  });

  it('XDG_CONFIG_HOME and CLAUDE_CONFIG_DIR move the Linux locations; Claude Code local scope is keyed by the project', () => {
    const env = { HOME: '/home/u', XDG_CONFIG_HOME: '/xdg', CLAUDE_CONFIG_DIR: '/cc' };
    expect(locateConfig('vscode', false, { ...linux, env }).file).toBe('/xdg/Code/User/mcp.json');
    const code = locateConfig('claude-code', false, { ...linux, env });
    expect(code.file).toBe('/cc/.claude.json');
    expect(code.sections.map((s) => [s.path, s.scope])).toEqual([
      [['mcpServers'], 'user'],
      [['projects', '/work/app', 'mcpServers'], 'local'],
    ]);
    expect(locateConfig('vscode', false, linux).sections[0]?.path).toEqual(['servers']);
    expect(() => locateConfig('windsurf', true, linux)).toThrow(/no project-scoped/);
  });
});

describe('recognising a wrapped entry', () => {
  it.each([
    [
      ['npx', '-y', 'mcp-sandbox', 'run', '--', 'uvx', 'x'],
      { launcher: ['npx', '-y', 'mcp-sandbox'], runArgs: [], server: ['uvx', 'x'] },
    ],
    [
      ['npx', '--yes', 'mcp-sandbox@0.1.0', 'run', '-b', 'e2b', '--env=A', '--quiet', '--', 'node', 's.js'],
      {
        launcher: ['npx', '--yes', 'mcp-sandbox@0.1.0'],
        runArgs: ['-b', 'e2b', '--env=A', '--quiet'],
        server: ['node', 's.js'],
        backend: 'e2b',
      },
    ],
    [
      ['/opt/bin/mcp-sandbox', 'run', '--backend=local', 'srv', '--flag'],
      {
        launcher: ['/opt/bin/mcp-sandbox'],
        runArgs: ['--backend=local'],
        server: ['srv', '--flag'],
        backend: 'local',
      },
    ],
    [
      ['/opt/build/dist/bin.js', 'run', '--wrapped', '--', 'x'],
      { launcher: ['/opt/build/dist/bin.js'], runArgs: ['--wrapped'], server: ['x'] },
    ],
    [
      ['node', '/opt/build/dist/bin.js', 'run', '--wrapped', '-b', 'e2b', '--', 'x'],
      {
        launcher: ['node', '/opt/build/dist/bin.js'],
        runArgs: ['--wrapped', '-b', 'e2b'],
        server: ['x'],
        backend: 'e2b',
      },
    ],
    [
      ['C:\\npm\\mcp-sandbox.cmd', 'run', '--', 'x'],
      { launcher: ['C:\\npm\\mcp-sandbox.cmd'], runArgs: [], server: ['x'] },
    ],
  ])('%j', (argv, expected) => {
    const parsed = parseWrapped(argv[0] as string, argv.slice(1));
    expect(parsed).toMatchObject(expected);
    // Read by run's own parser: the backend only when given.
    expect(parsed?.backend).toBe((expected as { backend?: string }).backend);
    expect(parsed?.run?.command).toEqual(expected.server);
  });

  it.each([
    [['npx', '-y', 'mcp-sandboxer', 'run', '--', 'x']],
    [['npx', '-y', '@other/mcp-sandbox', 'run', '--', 'x']],
    [['mcp-sandbox', 'doctor']],
    [['mcp-sandbox', 'run', '--']],
    [['node', 'server.js', 'run']],
    // A path that merely contains the name is not a launcher; neither is the marker among a server's arguments.
    [['/opt/mcp-sandbox/dist/bin.js', 'run', '--', 'x']],
    [['node', '/opt/mcp-sandbox/dist/bin.js', 'run', '--', 'x']],
    [['node', 'server.js', '--', 'run', '--wrapped']],
  ])('not %j', (argv) => {
    expect(parseWrapped(argv[0] as string, argv.slice(1))).toBeUndefined();
  });
});

it('ls masks credentials in arguments', () => {
  expect(maskSecrets('postgres://dev:hunter2@db/x')).toBe('postgres://dev:***@db/x');
  expect(maskSecrets('--api-key=abc')).toBe('--api-key=***');
  expect(maskSecrets('--token=abc')).toBe('--token=***');
  expect(maskSecrets('--name=abc')).toBe('--name=abc');
});

it('run options unknown to the parser are kept whole when "--" closes them', () => {
  expect(
    parseWrapped('npx', [
      '-y',
      'mcp-sandbox@1',
      'run',
      '--allow-tool',
      'read_*',
      '--future-flag',
      'v',
      '--',
      'srv',
      '--',
      'x',
    ]),
  ).toEqual({
    launcher: ['npx', '-y', 'mcp-sandbox@1'],
    runArgs: ['--allow-tool', 'read_*', '--future-flag', 'v'],
    server: ['srv', '--', 'x'],
    // run refuses an option it does not know: the entry never starts as it stands.
    refused: "unknown option '--future-flag'",
  });
  // A hand-written entry without run options: the server's own "--" is its own.
  expect(parseWrapped('mcp-sandbox', ['run', 'npx', '-y', 'foo', '--', 'bar'])?.server).toEqual([
    'npx',
    '-y',
    'foo',
    '--',
    'bar',
  ]);
});
