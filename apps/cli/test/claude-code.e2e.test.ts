/**
 * Claude Code as the client: a server never installed before (not in this test's npm cache, not
 * in its install root), added with `claude mcp add` behind `mcp-sandbox run`, shows as connected
 * in `claude mcp list` by the second try. The first start installs from the real registry; an
 * install the health check gives up on goes on in the background, so the second try is warm.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claudeIn } from './claude-cli.js';
import { BIN } from './helpers.js';

const SERVER = '@modelcontextprotocol/server-memory';
/** The uid installs write as: the user, or the sandbox's own uid when running as root. */
const INSTALL_UID = process.getuid?.() === 0 ? 65534 : (process.getuid?.() ?? 0);

const dir = mkdtempSync(join(tmpdir(), 'claude-code-e2e-'));
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('Claude Code', () => {
  it('shows a never-installed sandboxed npx server as connected by the second `claude mcp list`', {
    timeout: 240_000,
  }, async () => {
    const home = join(dir, 'home');
    const npmCache = join(home, '.npm');
    mkdirSync(npmCache, { recursive: true, mode: 0o755 });
    chmodSync(home, 0o755);
    if (INSTALL_UID !== process.getuid?.()) chownSync(npmCache, INSTALL_UID, INSTALL_UID);
    const claude = claudeIn(home);
    const added = await claude([
      'mcp',
      'add',
      '-s',
      'user',
      'memory',
      '--',
      process.execPath,
      BIN,
      'run',
      '--',
      'npx',
      '-y',
      SERVER,
    ]);
    expect(added).toContain('Added stdio MCP server memory');
    const tries: string[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const listed = await claude(['mcp', 'list']);
      const line = listed.split('\n').find((text) => text.startsWith('memory:')) ?? listed;
      tries.push(line);
      if (line.includes('✔ Connected')) break;
    }
    expect(tries.at(-1), tries.join('\n')).toContain('✔ Connected');
    expect(tries.length, tries.join('\n')).toBeLessThanOrEqual(2);
    // Control: it was installed here and now, its packages fetched into the user's npm cache.
    const entries = readdirSync(join(home, '.cache', 'mcp-sandbox', 'npm'));
    expect(entries.filter((name) => /^[0-9a-f]{24}$/.test(name))).toHaveLength(1);
    expect(readdirSync(npmCache)).toContain('_cacache');
  });
});
