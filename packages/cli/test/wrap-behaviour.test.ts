import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { createFakeBackend } from '@mcpsandbox/backend-fake';
import { afterEach, describe, expect, it } from 'vitest';
import { parseJsonDocument, toValue } from '../src/config/jsonc.js';
import { runCli } from '../src/index.js';
import { fixture, sandboxHome } from './helpers.js';

let h: ReturnType<typeof sandboxHome>;
afterEach(() => h?.cleanup());

const desktopPath = () => join(h.home, '.config', 'Claude', 'claude_desktop_config.json');

function desktop(text = fixture('claude-desktop/original.txt')) {
  h = sandboxHome();
  const file = desktopPath();
  h.put(file, text);
  return file;
}

function noLeftovers(file: string) {
  const dir = dirname(file);
  return readdirSync(dir).filter((n) => n !== file.split('/').pop());
}

describe('refusals leave the file untouched', () => {
  it('a comment in a plain-JSON client config is refused with its line and column', async () => {
    const text = '{\n  "mcpServers": {\n    // a comment\n    "a": { "command": "x" }\n  }\n}\n';
    const file = desktop(text);
    const result = await h.run(['wrap', '--client', 'claude-desktop', '--all']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${file}:3:5: comments are not allowed`);
    expect(result.stderr).toContain('not changed');
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(noLeftovers(file)).toEqual([]);
  });

  it('the same comment is fine where the client reads JSONC (Cursor)', async () => {
    h = sandboxHome();
    const file = join(h.home, '.cursor', 'mcp.json');
    h.put(file, '{\n  "mcpServers": {\n    // a comment\n    "a": { "command": "x" }\n  }\n}\n');
    const result = await h.run(['wrap', '--client', 'cursor', '--all']);
    expect(result.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toContain('"command": "npx"');
  });

  it.each([
    ['a missing comma', '{\n  "mcpServers": {\n    "a": { "command": "x" }\n    "b": {}\n  }\n}\n', '4:5'],
    ['a trailing comma', '{\n  "mcpServers": {\n    "a": { "command": "x" },\n  }\n}\n', '3:28'],
    ['an unterminated string', '{\n  "mcpServers": {\n    "a": { "command": "x }\n  }\n}\n', '3:23'],
    ['a truncated file', '{\n  "mcpServers": {\n    "a": { "command": "x" }\n', '4:1'],
    ['an empty file', '', '1:1'],
  ])('invalid JSON (%s) is refused at %s, never overwritten', async (_what, text, position) => {
    const file = desktop(text);
    const result = await h.run(['wrap', '--client', 'claude-desktop', '--all']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${file}:${position}:`);
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(noLeftovers(file)).toEqual([]);
    const unwrap = await h.run(['unwrap', '--client', 'claude-desktop', '--all']);
    expect(unwrap.code).toBe(1);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('bytes that are not UTF-8 are refused', async () => {
    h = sandboxHome();
    const file = desktopPath();
    mkdirSync(dirname(file), { recursive: true });
    const bytes = Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]);
    writeFileSync(file, bytes);
    const result = await h.run(['wrap', '--client', 'claude-desktop', '--all']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('not UTF-8');
    expect(readFileSync(file)).toEqual(bytes);
  });

  it('a missing config says where it looked', async () => {
    h = sandboxHome();
    const result = await h.run(['wrap', '--client', 'windsurf', '--all']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(join(h.home, '.codeium', 'windsurf', 'mcp_config.json'));
  });

  it('usage errors: no selection, unknown server, --env with a value, --project where there is none', async () => {
    const file = desktop();
    const none = await h.run(['wrap', '--client', 'claude-desktop']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--server <name>');
    expect(none.stderr).toContain('github, memory, tabbed');
    const unknown = await h.run(['wrap', '--client', 'claude-desktop', '--server', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no server named nope');
    const secret = await h.run(['wrap', '--client', 'claude-desktop', '--all', '--env', 'TOKEN=abc123']);
    expect(secret.code).toBe(2);
    expect(secret.stderr).not.toContain('abc123');
    const project = await h.run(['wrap', '--client', 'claude-desktop', '--project', '--all']);
    expect(project.code).toBe(2);
    expect(project.stderr).toContain('no project-scoped');
    const client = await h.run(['wrap', '--client', 'emacs', '--all']);
    expect(client.code).toBe(2);
    expect(readFileSync(file, 'utf8')).toBe(fixture('claude-desktop/original.txt'));
    expect(noLeftovers(file)).toEqual([]);
  });
});

describe('wrap', () => {
  it('wraps only the chosen servers and says why it leaves others alone', async () => {
    const file = desktop();
    const result = await h.run([
      'wrap',
      '--client',
      'claude-desktop',
      '--server',
      'memory',
      '--server',
      'sandboxed-already',
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('memory: wrapped');
    expect(result.stderr).toContain(
      'sandboxed-already: skipped (already sandboxed; wrap --update replaces its run options), left alone',
    );
    const value = toValue(parseJsonDocument(readFileSync(file, 'utf8'), { comments: false })) as {
      mcpServers: Record<string, { command: string; args?: string[] }>;
    };
    expect(value.mcpServers.memory?.args).toEqual([
      '-y',
      'mcp-sandbox@1.2.3',
      'run',
      '--',
      'npx',
      '-y',
      '@modelcontextprotocol/server-memory',
    ]);
    expect(value.mcpServers.github?.command).toBe('npx');
    expect(value.mcpServers.github?.args).toEqual(['-y', '@modelcontextprotocol/server-github']);
    // Names and order of entries are unchanged.
    expect(Object.keys(value.mcpServers)).toEqual([
      'github',
      'memory',
      'tabbed',
      'everything',
      'sandboxed-already',
      'escaped',
      'remote-sse',
    ]);
  });

  it('never copies an env value into the arguments', async () => {
    const file = desktop();
    await h.run(['wrap', '--client', 'claude-desktop', '--all']);
    const text = readFileSync(file, 'utf8');
    const value = toValue(parseJsonDocument(text, { comments: false })) as {
      mcpServers: { github: { args: string[]; env: Record<string, string> } };
    };
    // A token of a server whose API host is known is bound to that host, by name only.
    expect(value.mcpServers.github.args).toContain('GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com');
    expect(value.mcpServers.github.args.join(' ')).not.toContain('ghp_fixture');
    expect(text.match(/ghp_fixture/g)).toHaveLength(1);
  });

  it('keeps the mode of the file and writes through a symlink', async () => {
    h = sandboxHome();
    const real = join(h.root, 'dotfiles', 'claude.json');
    h.put(real, fixture('claude-desktop/original.txt'));
    chmodSync(real, 0o600);
    const link = desktopPath();
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(real, link);
    const result = await h.run(['wrap', '--client', 'claude-desktop', '--all']);
    expect(result.code).toBe(0);
    expect(readFileSync(real, 'utf8')).toBe(fixture('claude-desktop/wrapped.txt'));
    expect(statSync(real).mode & 0o777).toBe(0o600);
    const backups = readdirSync(dirname(real)).filter((n) => n.includes('.mcp-sandbox-'));
    expect(backups).toHaveLength(1);
    expect(statSync(join(dirname(real), backups[0] as string)).mode & 0o777).toBe(0o600);
    // Still a link.
    expect(readFileSync(link, 'utf8')).toBe(readFileSync(real, 'utf8'));
    expect(readdirSync(dirname(link))).toEqual(['claude_desktop_config.json']);
  });

  it('--launcher path writes the absolute mcp-sandbox found on PATH', async () => {
    const file = desktop();
    const bin = join(h.root, 'bin');
    // A global install: bin/mcp-sandbox links to the package's own bin script.
    const pkg = join(h.root, 'lib', 'node_modules', 'mcp-sandbox');
    h.put(join(pkg, 'package.json'), '{ "name": "mcp-sandbox", "bin": { "mcp-sandbox": "dist/bin.js" } }');
    h.put(join(pkg, 'dist', 'bin.js'), '#!/bin/sh\n');
    chmodSync(join(pkg, 'dist', 'bin.js'), 0o755);
    mkdirSync(bin);
    symlinkSync(join(pkg, 'dist', 'bin.js'), join(bin, 'mcp-sandbox'));
    h.env.PATH = `${bin}:${h.env.PATH}`;
    const result = await h.run([
      'wrap',
      '--client',
      'claude-desktop',
      '--server',
      'memory',
      '--launcher',
      'path',
    ]);
    expect(result.code).toBe(0);
    const value = toValue(parseJsonDocument(readFileSync(file, 'utf8'), { comments: false })) as {
      mcpServers: { memory: { command: string; args: string[] } };
    };
    expect(value.mcpServers.memory.command).toBe(join(bin, 'mcp-sandbox'));
    expect(value.mcpServers.memory.args).toEqual([
      'run',
      '--',
      'npx',
      '-y',
      '@modelcontextprotocol/server-memory',
    ]);
    // ls recognises that launcher too, and unwrap takes it back out.
    const ls = await h.run(['ls', '--client', 'claude-desktop']);
    expect(ls.stdout).toMatch(/memory\s+✓ sandboxed, backend local \(default\)/);
    await h.run(['unwrap', '--client', 'claude-desktop', '--server', 'memory']);
    expect(readFileSync(file, 'utf8')).toBe(fixture('claude-desktop/original.txt'));
  });

  it('--launcher takes any executable path (relative ones made absolute) and marks the entry', async () => {
    const file = desktop();
    // A local build: nothing in its path says mcp-sandbox.
    const build = join(h.root, 'project', 'build', 'dist', 'bin.js');
    h.put(build, '#!/bin/sh\n');
    h.put(
      join(h.root, 'project', 'build', 'package.json'),
      '{ "name": "mcp-sandbox", "bin": "dist/bin.js" }',
    );
    const notExecutable = await h.run(['wrap', '--client', 'claude-desktop', '--all', '--launcher', build]);
    expect(notExecutable.code).toBe(2);
    expect(notExecutable.stderr).toContain('is not an executable file');
    expect(readFileSync(file, 'utf8')).toBe(fixture('claude-desktop/original.txt'));
    chmodSync(build, 0o755);
    const result = await h.run([
      'wrap',
      '--client',
      'claude-desktop',
      '--server',
      'memory',
      '--launcher',
      'build/dist/bin.js',
    ]);
    expect(result.code).toBe(0);
    const value = toValue(parseJsonDocument(readFileSync(file, 'utf8'), { comments: false })) as {
      mcpServers: { memory: { command: string; args: string[] } };
    };
    expect(value.mcpServers.memory.command).toBe(build);
    expect(value.mcpServers.memory.args).toEqual([
      'run',
      '--wrapped',
      '--',
      'npx',
      '-y',
      '@modelcontextprotocol/server-memory',
    ]);
    const ls = await h.run(['ls', '--client', 'claude-desktop']);
    expect(ls.stdout).toMatch(/memory\s+✓ sandboxed, backend local \(default\)/);
    // A second wrap leaves it alone, and unwrap takes it back out exactly.
    const again = await h.run([
      'wrap',
      '--client',
      'claude-desktop',
      '--server',
      'memory',
      '--launcher',
      build,
    ]);
    expect(again.stderr).toContain('memory: skipped');
    await h.run(['unwrap', '--client', 'claude-desktop', '--server', 'memory']);
    expect(readFileSync(file, 'utf8')).toBe(fixture('claude-desktop/original.txt'));
  });

  it("forwards run's other options as given, and only those the user set", async () => {
    const file = desktop();
    const result = await h.run([
      'wrap',
      '--client',
      'claude-desktop',
      '--server',
      'memory',
      '--allow-tool',
      'read_*',
      '--allow-tool',
      'list_*',
      '--pin-tools',
      'pins.json',
      '--require-isolation',
      'os',
      '--quiet',
    ]);
    expect(result.code).toBe(0);
    const value = toValue(parseJsonDocument(readFileSync(file, 'utf8'), { comments: false })) as {
      mcpServers: { memory: { args: string[] } };
    };
    expect(value.mcpServers.memory.args).toEqual([
      '-y',
      'mcp-sandbox@1.2.3',
      'run',
      '--allow-tool',
      'read_*',
      '--allow-tool',
      'list_*',
      '--pin-tools',
      join(h.project, 'pins.json'),
      '--require-isolation',
      'os',
      '--quiet',
      '--',
      'npx',
      '-y',
      '@modelcontextprotocol/server-memory',
    ]);
    await h.run(['unwrap', '--client', 'claude-desktop', '--server', 'memory']);
    expect(readFileSync(file, 'utf8')).toBe(fixture('claude-desktop/original.txt'));
  });

  it('mount paths are made absolute, since the client starts the server elsewhere', async () => {
    const file = desktop();
    mkdirSync(join(h.project, 'data'));
    const result = await h.run([
      'wrap',
      '--client',
      'claude-desktop',
      '--server',
      'memory',
      '--mount',
      'data',
    ]);
    expect(result.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toContain(
      `"--mount", ${JSON.stringify(`${join(h.project, 'data')}:${join(h.project, 'data')}:ro`)}`,
    );
  });

  it('the wrapped entry runs: its arguments go through `run`, and the env block crosses, nothing else', async () => {
    h = sandboxHome();
    const file = join(h.project, '.mcp.json');
    h.put(
      file,
      '{ "mcpServers": { "fake": { "command": "fake-mcp-server", "args": [], "env": { "MY_TOKEN": "tok-123456789" } } } }\n',
    );
    expect(
      (await h.run(['wrap', '--client', 'claude-code', '--project', '--all', '--backend', 'fake'])).code,
    ).toBe(0);
    const entry = (
      toValue(parseJsonDocument(readFileSync(file, 'utf8'), { comments: false })) as {
        mcpServers: { fake: { command: string; args: string[]; env: Record<string, string> } };
      }
    ).mcpServers.fake;
    expect(entry.command).toBe('npx');
    // What the client would run: `npx -y mcp-sandbox@1.2.3 <rest>`, with its env block added to its own.
    const rest = entry.args.slice(2);
    const input = new PassThrough();
    let out = '';
    const stdout = new Writable({
      write(chunk, _e, done) {
        out += chunk.toString();
        done();
      },
    });
    const stderr = new Writable({ write: (_c, _e, done) => done() });
    input.end(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get-env', arguments: {} } })}\n`,
    );
    const code = await runCli(rest, {
      backends: { fake: { summary: 'fake', create: createFakeBackend } },
      defaultBackend: 'fake',
      version: '1.2.3',
      io: {
        stdin: input,
        stdout,
        stderr,
        env: { HOME: '/home/x', OTHER_SECRET: 'nope', ...entry.env },
        cwd: '/',
      },
    });
    expect(code).toBe(0);
    const answer = JSON.parse(out.trim()) as { result: { content: Array<{ text: string }> } };
    const env = JSON.parse(answer.result.content[0]?.text ?? '{}') as Record<string, string>;
    expect(env).toEqual({ MY_TOKEN: 'tok-123456789' });
  });
});

describe('unwrap', () => {
  it('restores wrapped entries exactly while keeping changes made elsewhere since', async () => {
    const file = desktop();
    await h.run(['wrap', '--client', 'claude-desktop', '--server', 'github', '--server', 'tabbed']);
    // The client (or the user) edits another part of the file meanwhile.
    const edited = readFileSync(file, 'utf8').replace('"sidebarMode": "chat"', '"sidebarMode": "code"');
    writeFileSync(file, edited);
    const result = await h.run([
      'unwrap',
      '--client',
      'claude-desktop',
      '--server',
      'github',
      '--server',
      'tabbed',
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('github: unwrapped (restored from the backup)');
    expect(readFileSync(file, 'utf8')).toBe(
      fixture('claude-desktop/original.txt').replace('"sidebarMode": "chat"', '"sidebarMode": "code"'),
    );
  });

  it('without a backup, takes the command back out of the arguments (exact where there were arguments)', async () => {
    const file = desktop();
    await h.run([
      'wrap',
      '--client',
      'claude-desktop',
      '--server',
      'github',
      '--server',
      'tabbed',
      '--ttl',
      '1h',
    ]);
    for (const backup of h.backups(file)) writeFileSync(backup, '{}');
    const result = await h.run(['unwrap', '--client', 'claude-desktop', '--all']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      'github: unwrapped (restored from its own arguments; run options dropped: --ttl 1h --allow-net api.github.com --secret GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com)',
    );
    const text = readFileSync(file, 'utf8');
    const original = fixture('claude-desktop/original.txt');
    // github had arguments: its bytes are back as they were.
    expect(text).toContain(original.slice(original.indexOf('"github"'), original.indexOf('"memory"')));
    // tabbed had none: it keeps an empty "args".
    const value = toValue(parseJsonDocument(text, { comments: false })) as {
      mcpServers: Record<string, { command: string; args?: string[] }>;
    };
    expect(value.mcpServers.tabbed).toEqual({ command: '/usr/local/bin/tabbed-server', args: [] });
    // The entry sandboxed by hand was unwrapped too (--all).
    expect(value.mcpServers['sandboxed-already']).toEqual({
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-fetch'],
    });
  });

  it('an entry edited since wrap is restored from its arguments, keeping the edit', async () => {
    const file = desktop();
    await h.run(['wrap', '--client', 'claude-desktop', '--server', 'github']);
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace('ghp_fixture0000000000000000000000000000', 'ghp_new'),
    );
    await h.run(['unwrap', '--client', 'claude-desktop', '--server', 'github']);
    expect(readFileSync(file, 'utf8')).toBe(
      fixture('claude-desktop/original.txt').replace('ghp_fixture0000000000000000000000000000', 'ghp_new'),
    );
  });

  it('unwrap --dry-run shows the diff and writes nothing', async () => {
    const file = desktop();
    await h.run(['wrap', '--client', 'claude-desktop', '--server', 'github']);
    const wrapped = readFileSync(file, 'utf8');
    const result = await h.run(['unwrap', '--client', 'claude-desktop', '--server', 'github', '--dry-run']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^-\s+"mcp-sandbox@1\.2\.3",$/m);
    expect(result.stderr).toContain('dry run: 1 server(s) would be unwrapped; nothing written');
    expect(readFileSync(file, 'utf8')).toBe(wrapped);
    expect(h.backups(file)).toHaveLength(1);
  });

  it('unwrap leaves entries that are not sandboxed alone', async () => {
    const file = desktop();
    const result = await h.run(['unwrap', '--client', 'claude-desktop', '--server', 'memory']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('memory: skipped (not sandboxed)');
    expect(readFileSync(file, 'utf8')).toBe(fixture('claude-desktop/original.txt'));
    expect(existsSync(file)).toBe(true);
    expect(h.backups(file)).toEqual([]);
  });
});

describe('ls', () => {
  it('lists each client and scope, sandboxed or not, with the backend; never prints secrets', async () => {
    h = sandboxHome();
    h.put(desktopPath(), fixture('claude-desktop/original.txt'));
    h.put(join(h.home, '.claude.json'), fixture('claude-code-user/original.txt'));
    h.put(join(h.project, '.cursor', 'mcp.json'), fixture('cursor-project/original.txt'));
    h.put(join(h.home, '.codeium', 'windsurf', 'mcp_config.json'), '{ "mcpServers": { ');
    await h.run(['wrap', '--client', 'claude-desktop', '--server', 'github', '--backend', 'fake']);
    await h.run(['wrap', '--client', 'claude-code', '--all'], {}, '/home/dev/my-project');
    const result = await h.run(['ls'], {}, h.project);
    expect(result.code).toBe(1); // the broken Windsurf file is reported
    const out = result.stdout;
    expect(out).toMatch(/^Claude Desktop \(user\) ~\/\.config\/Claude\/claude_desktop_config\.json$/m);
    expect(out).toMatch(
      /^ {2}github +✓ sandboxed, backend fake +npx -y @modelcontextprotocol\/server-github$/m,
    );
    expect(out).toMatch(/^ {2}memory +✗ not sandboxed +npx -y @modelcontextprotocol\/server-memory$/m);
    expect(out).toMatch(/^ {2}sandboxed-already +✓ sandboxed, backend e2b /m);
    expect(out).toMatch(/^ {2}filesystem +✓ sandboxed, backend local \(default\)/m);
    expect(out).toMatch(/^ {2}notion +· remote, not run here +https:\/\/mcp\.notion\.com\/mcp$/m);
    expect(out).toMatch(/^Cursor \(project\) .*\.cursor\/mcp\.json$/m);
    expect(out).toMatch(/^ {2}docs +✗ not sandboxed +uvx mcp-server-fetch --ignore-robots-txt$/m);
    expect(out).toMatch(/^VS Code \(user\) .*: no config file$/m);
    expect(out).toMatch(/^Windsurf \(user\) .*: ✗ .*mcp_config\.json:1:19: expected a property name/m);
    expect(out).not.toMatch(/ghp_fixture|fixture-password|fixture-key/);
    expect(result.stderr).toBe('');
  });

  it('--json, and local-scope entries of Claude Code for the current project', async () => {
    h = sandboxHome();
    h.put(join(h.home, '.claude.json'), fixture('claude-code-user/original.txt'));
    const result = await h.run(['ls', '--client', 'claude-code', '--json'], {}, '/home/dev/my-project');
    expect(result.code).toBe(0);
    const listed = JSON.parse(result.stdout) as Array<{
      scope: string;
      servers: Array<{ name: string; scope: string; kind: string }>;
    }>;
    expect(listed.map((l) => l.scope)).toEqual(['user', 'project']);
    expect(listed[0]?.servers.map((s) => [s.name, s.scope, s.kind])).toEqual([
      ['filesystem', 'user', 'stdio'],
      ['sandboxed', 'user', 'wrapped'],
      ['notion', 'user', 'remote'],
      ['postgres', 'local', 'stdio'],
    ]);
    expect(result.stdout).not.toContain('fixture-password');
  });
});

describe('edge cases', () => {
  it('an env name run cannot forward: the entry is left alone, with the reason', async () => {
    h = sandboxHome();
    const file = join(h.home, '.cursor', 'mcp.json');
    const text =
      '{ "mcpServers": { "odd": { "command": "x", "env": { "my-key": "1" } }, "fine": { "command": "y" } } }\n';
    h.put(file, text);
    const result = await h.run(['wrap', '--client', 'cursor', '--all']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('odd: skipped ("env" has names run cannot forward: my-key), left alone');
    expect(readFileSync(file, 'utf8')).toContain('"odd": { "command": "x", "env"');
    expect(readFileSync(file, 'utf8')).toContain(
      '"fine": { "command": "npx", "args": ["-y", "mcp-sandbox@1.2.3", "run", "--", "y"] }',
    );
  });

  it('CRLF files with one argument a line get CRLF in what is inserted, and come back exactly', async () => {
    h = sandboxHome();
    const file = join(h.home, '.cursor', 'mcp.json');
    const text =
      '{\r\n  "mcpServers": {\r\n    "a": {\r\n      "command": "node",\r\n      "args": [\r\n        "s.js"\r\n      ]\r\n    },\r\n    "b": {\r\n      "command": "node"\r\n    }\r\n  }\r\n}\r\n';
    h.put(file, text);
    expect((await h.run(['wrap', '--client', 'cursor', '--all'])).code).toBe(0);
    const wrapped = readFileSync(file, 'utf8');
    expect(wrapped.replace(/\r\n/g, '')).not.toContain('\n');
    expect(wrapped).toContain('        "-y",\r\n        "mcp-sandbox@1.2.3",\r\n');
    expect(wrapped).toContain(
      '      "command": "npx",\r\n      "args": ["-y", "mcp-sandbox@1.2.3", "run", "--", "node"]\r\n',
    );
    for (const backup of h.backups(file)) writeFileSync(backup, '{}');
    await h.run(['unwrap', '--client', 'cursor', '--server', 'a']);
    expect(readFileSync(file, 'utf8')).toBe(
      text.replace(
        '"command": "node"\r\n    }',
        '"command": "npx",\r\n      "args": ["-y", "mcp-sandbox@1.2.3", "run", "--", "node"]\r\n    }',
      ),
    );
  });
});

const entryArgs = (file: string, name: string) =>
  (
    toValue(parseJsonDocument(readFileSync(file, 'utf8'), { comments: false })) as {
      mcpServers: Record<string, { command: string; args: string[] }>;
    }
  ).mcpServers[name]?.args ?? [];

describe('wrap carries host paths across', () => {
  // Before, the wrapped server started with the paths its config names hidden.
  it('mounts each existing absolute path an entry names, read-only, and leaves missing ones out', async () => {
    h = sandboxHome();
    const notes = join(h.root, 'notes');
    mkdirSync(notes);
    const file = join(h.project, '.mcp.json');
    h.put(
      file,
      `${JSON.stringify({
        mcpServers: {
          tool: { command: 'my-tool', args: ['--root', notes, `--data=${notes}/`, '/no/such/dir', '/'] },
        },
      })}\n`,
    );
    const result = await h.run(['wrap', '--client', 'claude-code', '--project', '--all']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`"--mount","${notes}:${notes}:ro"`);
    const args = entryArgs(file, 'tool');
    expect(args.filter((a) => a === '--mount')).toHaveLength(1);
    expect(args).toContain(`${notes}:${notes}:ro`);
    expect(args.slice(args.indexOf('--'))).toEqual([
      '--',
      'my-tool',
      '--root',
      notes,
      `--data=${notes}/`,
      '/no/such/dir',
      '/',
    ]);
  });

  it('mounts read-write for a known writer (server-filesystem) or with --rw, never twice', async () => {
    h = sandboxHome();
    const notes = join(h.root, 'notes');
    const other = join(h.root, 'other');
    mkdirSync(notes);
    mkdirSync(other);
    const file = join(h.project, '.mcp.json');
    h.put(
      file,
      `${JSON.stringify({
        mcpServers: {
          fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem@2026.8.31', notes] },
          tool: { command: 'my-tool', args: [notes, other] },
        },
      })}\n`,
    );
    expect((await h.run(['wrap', '--client', 'claude-code', '--project', '--server', 'fs'])).code).toBe(0);
    expect(entryArgs(file, 'fs')).toContain(`${notes}:${notes}:rw`);
    const result = await h.run([
      'wrap',
      '--client',
      'claude-code',
      '--project',
      '--server',
      'tool',
      '--rw',
      '--mount',
      `${notes}:ro`,
    ]);
    expect(result.code).toBe(0);
    const args = entryArgs(file, 'tool');
    expect(args.filter((a) => a === '--mount')).toHaveLength(2);
    expect(args).toContain(`${notes}:${notes}:ro`);
    expect(args).toContain(`${other}:${other}:rw`);
  });

  it('adds no mounts for a backend that applies none', async () => {
    h = sandboxHome();
    const notes = join(h.root, 'notes');
    mkdirSync(notes);
    const file = join(h.project, '.mcp.json');
    h.put(file, `${JSON.stringify({ mcpServers: { tool: { command: 'my-tool', args: [notes] } } })}\n`);
    const result = await h.run(['wrap', '--client', 'claude-code', '--project', '--all', '--backend', 'vm'], {
      backends: {
        vm: { summary: 'no mounts', create: createFakeBackend, ignores: ['--mount'] },
      },
      defaultBackend: 'vm',
    });
    expect(result.code).toBe(0);
    expect(entryArgs(file, 'tool')).not.toContain('--mount');
  });
});

describe('wrap --update', () => {
  it('leaves a wrapped entry alone without it, and replaces its run options with it, in the diff', async () => {
    h = sandboxHome();
    const notes = join(h.root, 'notes');
    mkdirSync(notes);
    const file = join(h.project, '.mcp.json');
    const original = `{\n  "mcpServers": {\n    "tool": {\n      "command": "npx",\n      "args": [\n        "-y",\n        "mcp-sandbox@1.0.0",\n        "run",\n        "--ttl",\n        "5m",\n        "--",\n        "my-tool",\n        "${notes}"\n      ]\n    }\n  }\n}\n`;
    h.put(file, original);
    const plain = await h.run(['wrap', '--client', 'claude-code', '--project', '--all']);
    expect(plain.stderr).toContain(
      'tool: skipped (already sandboxed; wrap --update replaces its run options)',
    );
    expect(readFileSync(file, 'utf8')).toBe(original);

    const updated = await h.run([
      'wrap',
      '--client',
      'claude-code',
      '--project',
      '--all',
      '--update',
      '--ttl',
      '1h',
    ]);
    expect(updated.code).toBe(0);
    expect(updated.stderr).toContain('tool: rewrapped');
    expect(updated.stderr).toContain('-        "5m",');
    // The entry keeps the launcher it had: --update changes run's options only.
    expect(readFileSync(file, 'utf8')).toBe(
      `{\n  "mcpServers": {\n    "tool": {\n      "command": "npx",\n      "args": [\n        "-y",\n        "mcp-sandbox@1.0.0",\n        "run",\n        "--ttl",\n        "1h",\n        "--mount",\n        "${notes}:${notes}:ro",\n        "--",\n        "my-tool",\n        "${notes}"\n      ]\n    }\n  }\n}\n`,
    );
    // unwrap still finds the original command behind the new options.
    const unwrapped = await h.run(['unwrap', '--client', 'claude-code', '--project', '--all']);
    expect(unwrapped.code).toBe(0);
    expect(entryArgs(file, 'tool')).toEqual([notes]);
  });
});

describe('wrap --keep-state', () => {
  it("keeps each entry's writes under its own name, made a valid state name", async () => {
    h = sandboxHome();
    const file = join(h.project, '.mcp.json');
    h.put(
      file,
      `${JSON.stringify({ mcpServers: { memory: { command: 'mem' }, 'My Notes!': { command: 'notes' } } })}\n`,
    );
    const result = await h.run(['wrap', '--client', 'claude-code', '--project', '--all', '--keep-state']);
    expect(result.code).toBe(0);
    expect(entryArgs(file, 'memory')).toEqual([
      '-y',
      'mcp-sandbox@1.2.3',
      'run',
      '--state',
      'memory',
      '--',
      'mem',
    ]);
    expect(entryArgs(file, 'My Notes!')).toContain('My-Notes-');
    // Without the flag, nothing persists.
    h.put(file, `${JSON.stringify({ mcpServers: { memory: { command: 'mem' } } })}\n`);
    await h.run(['wrap', '--client', 'claude-code', '--project', '--all']);
    expect(entryArgs(file, 'memory')).not.toContain('--state');
  });
});

describe('what wrap and ls tell the user', () => {
  it('ls flags env-block names that the entry does not pass into the sandbox', async () => {
    h = sandboxHome();
    const file = join(h.project, '.mcp.json');
    h.put(
      file,
      `${JSON.stringify({
        mcpServers: {
          half: {
            command: 'npx',
            args: ['-y', 'mcp-sandbox@1.2.3', 'run', '--env', 'A_KEY', '--', 'srv'],
            env: { A_KEY: '1', B_KEY: '2' },
          },
        },
      })}\n`,
    );
    const ls = await h.run(['ls', '--client', 'claude-code']);
    expect(ls.stdout).toMatch(/^ {2}half +✓ sandboxed/m);
    expect(ls.stdout).toMatch(/⚠ env B_KEY: not passed into the sandbox/);
    expect(ls.stdout).not.toMatch(/env A_KEY/);
    const json = JSON.parse((await h.run(['ls', '--client', 'claude-code', '--json'])).stdout) as Array<{
      servers: Array<{ withheldEnv?: string[]; launcher?: string }>;
    }>;
    expect(json[1]?.servers[0]?.withheldEnv).toEqual(['B_KEY']);
    expect(json[1]?.servers[0]?.launcher).toBe('npx -y mcp-sandbox@1.2.3');
  });

  it('an entry with our launcher but a weak backend: unwrap restores it, wrap --update replaces its options, plain wrap sandboxes it whole', async () => {
    h = sandboxHome();
    const file = join(h.home, '.claude.json');
    const weak = {
      command: 'npx',
      args: ['-y', 'mcp-sandbox@1.2.3', 'run', '--backend', 'none', '--', 'srv', '-x'],
    };
    const text = `${JSON.stringify({ mcpServers: { weak } })}\n`;
    const entry = () =>
      (JSON.parse(readFileSync(file, 'utf8')) as { mcpServers: { weak: typeof weak } }).mcpServers.weak;
    h.put(file, text);
    const ls = await h.run(['ls', '--client', 'claude-code']);
    expect(ls.stdout).toMatch(/^ {2}weak +✗ not sandboxed /m);
    expect(ls.stdout).toContain('✗ --backend none: no sandbox');

    expect((await h.run(['unwrap', '--client', 'claude-code', '--all'])).code).toBe(0);
    expect(entry()).toEqual({ command: 'srv', args: ['-x'] });

    h.put(file, text);
    expect(
      (await h.run(['wrap', '--client', 'claude-code', '--all', '--update', '--backend', 'local'])).code,
    ).toBe(0);
    expect(entry().args).toEqual(['-y', 'mcp-sandbox@1.2.3', 'run', '--backend', 'local', '--', 'srv', '-x']);
    expect((await h.run(['ls', '--client', 'claude-code'])).stdout).toMatch(
      /^ {2}weak +✓ sandboxed, backend local /m,
    );

    // Asked for by the user, a weak option is written, and said first.
    const asked = await h.run(['wrap', '--client', 'claude-code', '--all', '--dry-run', '--backend', 'none']);
    expect(asked.stderr).toContain(
      '--backend none: no sandbox, the server runs with your user, files and network: the entries wrapped with it will not count as sandboxed',
    );

    h.put(file, text);
    expect((await h.run(['wrap', '--client', 'claude-code', '--all'])).code).toBe(0);
    expect(entry().args).toEqual(['-y', 'mcp-sandbox@1.2.3', 'run', '--', 'npx', ...weak.args]);
  });

  it('a known writer of its own data wrapped without --keep-state gets a note; with it, none', async () => {
    h = sandboxHome();
    const file = join(h.project, '.mcp.json');
    const text = `${JSON.stringify({ mcpServers: { mem: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] } } })}\n`;
    h.put(file, text);
    const plain = await h.run(['wrap', '--client', 'claude-code', '--project', '--all', '--dry-run']);
    expect(plain.stderr).toContain('mem: its data (kept in its home) will not persist across sessions');
    expect(plain.stderr).toContain('--keep-state');
    const kept = await h.run(['wrap', '--client', 'claude-code', '--project', '--all', '--keep-state']);
    expect(kept.stderr).not.toContain('will not persist');
  });

  it('names with control characters are escaped in every line wrap prints', async () => {
    h = sandboxHome();
    const file = join(h.project, '.mcp.json');
    h.put(file, `${JSON.stringify({ mcpServers: { '\u001b]0;owned\u0007x': { command: 'srv' } } })}\n`);
    const result = await h.run(['wrap', '--client', 'claude-code', '--project', '--all', '--keep-state']);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain('\u001b');
    expect(result.stderr).not.toContain('\u0007');
    expect(entryArgs(file, '\u001b]0;owned\u0007x')).toContain('0-owned-x');
  });
});
