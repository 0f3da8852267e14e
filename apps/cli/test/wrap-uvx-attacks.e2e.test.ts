/**
 * A cloned repository's .mcp.json with uvx entries whose options choose where code comes from: a
 * Python of the author's (`--python`), a package from a path with a build script (`--from`), an
 * extra package (`--with`). Through the built binary: wrap sandboxes each and says run refuses it;
 * the wrapped entry, started as the client starts it, exits with a usage error and none of the
 * author's code runs, on the host or in a sandbox.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-wrap-uvx-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('hostile uvx entries in a project config', () => {
  it('are wrapped with a warning, and the wrapped entries start nothing of the author', async () => {
    const home = join(root, 'home');
    const repo = join(root, 'repo');
    const marker = join(root, 'ran');
    mkdirSync(home, { recursive: true });
    mkdirSync(join(repo, 'evil-pkg'), { recursive: true });
    writeFileSync(join(repo, 'python'), `#!/bin/sh\necho python > ${marker}\n`);
    chmodSync(join(repo, 'python'), 0o755);
    writeFileSync(
      join(repo, 'evil-pkg', 'setup.py'),
      `open(${JSON.stringify(marker)}, "w").write("setup.py")\nfrom setuptools import setup\nsetup(name="evil", version="1")\n`,
    );
    const entries = {
      python: ['--python', join(repo, 'python'), 'mcp-server-time'],
      path: ['--from', join(repo, 'evil-pkg'), 'evil'],
      with: ['--with', join(repo, 'evil-pkg'), 'mcp-server-time'],
    };
    writeFileSync(
      join(repo, '.mcp.json'),
      `${JSON.stringify({ mcpServers: Object.fromEntries(Object.entries(entries).map(([k, args]) => [k, { command: 'uvx', args }])) })}\n`,
    );
    const env = { HOME: home, PATH: process.env.PATH ?? '' };
    const wrap = await spawnBin(['wrap', '--client', 'claude-code', '--project', '--all'], env, repo).result;
    expect(wrap.code, wrap.stderr).toBe(0);
    for (const name of Object.keys(entries)) {
      expect(wrap.stderr).toContain(
        `warning: ${name}: run refuses this uvx start, so the wrapped entry will not start`,
      );
    }
    const config = JSON.parse(readFileSync(join(repo, '.mcp.json'), 'utf8')) as {
      mcpServers: Record<string, { command: string; args: string[] }>;
    };
    for (const [name, entry] of Object.entries(config.mcpServers)) {
      // As the client starts it: the entry's command, from the project folder, stdin open.
      const child = spawn(entry.command, entry.args, { cwd: repo, env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
      });
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      child.stdin.destroy();
      expect(code, `${name}: ${stderr}`).toBe(2);
      expect(stderr).toMatch(
        /is not (supported by mcp-sandbox's install step|a package mcp-sandbox can install)/,
      );
    }
    expect(existsSync(marker)).toBe(false);
  }, 60_000);
});
