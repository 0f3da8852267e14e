/**
 * `--secret` with a real server from npm: @modelcontextprotocol/server-github (pinned), run by
 * the built binary on `local` with `--secret GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com`, a fake
 * token, and api.github.com resolved (in a network namespace of the test's own, see
 * secret-netns.ts) to the test's echo upstream. The SDK client lists the tools and calls one;
 * the upstream receives the fake token's real value, the client and the trace never do.
 * (The server hard-codes https://api.github.com; its node-fetch honours no proxy variable, so it
 * reaches the host through local's transparent path.)
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';
import { canUnshare, inNamespace, makeUpstream, seenBy, type Upstream } from './secret-netns.js';

const PACKAGE = '@modelcontextprotocol/server-github@2025.4.8';
const REAL = 'ghp_NpmServerFake0123456789abcdefFAKE0001';
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-secret-npm-'));
const prefix = join(dir, 'server');
let upstream: Upstream;

beforeAll(async () => {
  if (!canUnshare) return;
  upstream = await makeUpstream(dir, ['api.github.com']);
  mkdirSync(prefix, { mode: 0o755 });
  chmodSync(prefix, 0o755);
  // Installed on the host beforehand: the namespace reaches no registry.
  execFileSync(
    'npm',
    ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--ignore-scripts', PACKAGE],
    { stdio: 'pipe', timeout: 240_000 },
  );
}, 300_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!canUnshare)(
  '--secret with server-github from npm (root: a network namespace of its own)',
  () => {
    it('lists its tools and calls one; api.github.com receives the real token, the client and the trace never see it', async () => {
      const seenFile = join(dir, 'seen.jsonl');
      const trace = join(dir, 'trace.jsonl');
      const server = join(
        prefix,
        'node_modules',
        '@modelcontextprotocol',
        'server-github',
        'dist',
        'index.js',
      );
      const run = inNamespace(upstream, seenFile, join(dir, 'ready'), [
        process.execPath,
        BIN,
        'run',
        '--allow-net',
        'api.github.com',
        '--secret',
        'GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com',
        '--mount',
        `${prefix}:${prefix}:ro`,
        '--trace',
        trace,
        '--',
        'node',
        server,
      ]);
      const transport = new StdioClientTransport({
        command: run.command,
        args: run.args,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/',
          GITHUB_PERSONAL_ACCESS_TOKEN: REAL,
          NODE_EXTRA_CA_CERTS: upstream.ca,
        },
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const client = new Client({ name: 'mcp-sandbox-test', version: '1.0.0' }, { capabilities: {} });
      try {
        await client.connect(transport);
        const { tools } = await client.listTools();
        expect(tools.map((tool) => tool.name)).toContain('search_users');
        const result = await client.callTool({ name: 'search_users', arguments: { q: 'octocat' } });
        const text = JSON.stringify(result);
        expect(result.isError).not.toBe(true);
        expect(text).toContain('/search/users?q=octocat');
        expect(text).not.toContain(REAL);
      } finally {
        await client.close();
      }
      const seen = seenBy(seenFile);
      expect(seen.map((s) => s.url)).toEqual(['/search/users?q=octocat']);
      expect(seen[0]?.authorization).toBe(`Bearer ${REAL}`);
      expect(stderr).not.toContain(REAL);
      const records = readFileSync(trace, 'utf8');
      expect(records).not.toContain(REAL);
      expect(records).toContain('"type":"sandbox.secret-substituted","name":"GITHUB_PERSONAL_ACCESS_TOKEN"');
    }, 240_000);
  },
);
