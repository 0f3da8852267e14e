/**
 * Claude Code as the client of a Python server: `mcp-server-time` from PyPI, never installed
 * before (a fresh install cache and pin lock), added with `claude mcp add` behind `mcp-sandbox
 * run -- uvx`, shows as connected in `claude mcp list` by the second try. An install the health
 * check gives up on goes on in the background, so the second try is warm.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claudeIn } from './claude-cli.js';
import { BIN } from './helpers.js';

const SERVER = 'mcp-server-time==2026.10.19';

const dir = mkdtempSync(join(tmpdir(), 'uvx-claude-code-e2e-'));
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Claude Code with a uvx server', () => {
  it('shows a never-installed sandboxed uvx server as connected by the second `claude mcp list`', {
    timeout: 240_000,
  }, async () => {
    const home = join(dir, 'home');
    mkdirSync(home, { recursive: true, mode: 0o755 });
    // A private home and config: no account is needed for `mcp add` and `mcp list`. The user's
    // proxy and TLS trust are kept (PyPI is reached through them where there is one).
    const kept = [
      'HTTPS_PROXY',
      'https_proxy',
      'HTTP_PROXY',
      'http_proxy',
      'NO_PROXY',
      'no_proxy',
      'SSL_CERT_FILE',
    ];
    const claude = claudeIn(home, {
      ...Object.fromEntries(kept.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : []))),
      MCP_SANDBOX_PIN_LOCK: join(home, 'pins.json'),
    });
    const added = await claude([
      'mcp',
      'add',
      '-s',
      'user',
      'time',
      '--',
      process.execPath,
      BIN,
      'run',
      '--',
      'uvx',
      SERVER,
    ]);
    expect(added).toContain('Added stdio MCP server time');
    const tries: string[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const listed = await claude(['mcp', 'list']);
      const line = listed.split('\n').find((text) => text.startsWith('time:')) ?? listed;
      tries.push(line);
      if (line.includes('✔ Connected')) break;
    }
    expect(tries.at(-1), tries.join('\n')).toContain('✔ Connected');
    expect(tries.length, tries.join('\n')).toBeLessThanOrEqual(2);
    // Control: it was installed here and now, into this home's install cache.
    const entries = readdirSync(join(home, '.cache', 'mcp-sandbox', 'uv'));
    expect(entries.filter((name) => /^[0-9a-f]{24}$/.test(name))).toHaveLength(1);
  });
});
