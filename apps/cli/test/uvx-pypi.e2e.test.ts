import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Call, direct, sandboxed, text } from './pypi-helpers.js';

// Real Python servers from PyPI, pinned (uv installed at the version .ci/run pins): the tools and
// a tool call's results through the built binary on local are the ones a direct `uvx` gives.

const TIME = 'mcp-server-time==2026.10.19';
const FETCH = 'mcp-server-fetch==2026.10.24';
const GIT = 'mcp-server-git==2026.10.19';
const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-uvx-pypi-'));
chmodSync(root, 0o755);
/** The sandbox's install cache and pin lock, shared by the servers of this file. */
const boxEnv = { XDG_CACHE_HOME: join(root, 'cache'), MCP_SANDBOX_PIN_LOCK: join(root, 'pins.json') };
/** The direct starts' uv cache: empty at the first start of each server. */
const uvEnv = { UV_CACHE_DIR: join(root, 'direct-uv-cache') };

afterAll(() => rmSync(root, { recursive: true, force: true }));

const ms = (s: { ms: number }) => `${Math.round(s.ms)} ms`;

describe('uvx from PyPI through the built binary (local)', () => {
  it(`${TIME}: the same tools as a direct uvx, pinned on the first start, warm with no resolution`, async () => {
    const calls: Call[] = [['get_current_time', { timezone: 'Etc/UTC' }]];
    const plain = await direct([TIME], uvEnv, calls);
    const cold = await sandboxed([], [TIME], boxEnv, calls);
    expect(cold.stderr).toMatch(/pinned mcp-server-time==2026\.10\.19 from https:\/\/pypi\.org\/simple/);
    expect(cold.tools).toEqual(plain.tools);
    const warm = await sandboxed([], [TIME], boxEnv, calls);
    expect(warm.stderr).not.toMatch(/resolving|installing/);
    expect(warm.tools).toEqual(plain.tools);
    // The time itself differs by the second: the same fields, no error.
    const shape = (result: unknown) => ({
      isError: (result as { isError?: boolean }).isError ?? false,
      keys: Object.keys(JSON.parse(text(result) || '{}')).sort(),
    });
    expect(shape(warm.results[0])).toEqual(shape(plain.results[0]));
    expect(shape(warm.results[0]).keys).toContain('datetime');
    const warmDirect = await direct([TIME], uvEnv);
    process.stderr.write(
      `${TIME} to first tools/list: direct uvx cold ${ms(plain)}, warm ${ms(warmDirect)}; sandboxed cold ${ms(cold)}, warm ${ms(warm)}\n`,
    );
  }, 120_000);
});

describe(`${FETCH} with its one host granted`, () => {
  let web: Server;
  let origin = '';
  const seen: string[] = [];
  // Its own guard refuses private addresses: the test's site is on loopback (not 127.0.0.1,
  // which the sandbox's proxy settings keep for the sandbox's own loopback).
  const args = [FETCH, '--allow-private-ips'];

  beforeAll(async () => {
    web = createServer((req, res) => {
      seen.push(req.url ?? '');
      if (req.url === '/robots.txt')
        return res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(
        '<html><head><title>Loopback</title></head><body><h1>Hello</h1><p>A <b>page</b> the test serves.</p></body></html>',
      );
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.2', resolve));
    origin = `http://127.0.0.2:${(web.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => web.close(() => resolve())));

  it('the same tools and the same page as a direct uvx; without the grant, no page', async () => {
    const calls: Call[] = [['fetch', { url: `${origin}/page` }]];
    // No Node.js for the server on either side (a `node` that fails, first on PATH): see the
    // known bug below for why.
    const noNode = join(root, 'no-node');
    mkdirSync(noNode, { recursive: true });
    writeFileSync(join(noNode, 'node'), '#!/bin/sh\nexit 127\n', { mode: 0o755 });
    const plain = await direct(args, { ...uvEnv, PATH: `${noNode}:${process.env.PATH ?? ''}` }, calls);
    const grant = ['--allow-net', new URL(origin).host, '--env', 'PATH=/usr/sbin'];
    const cold = await sandboxed(grant, args, boxEnv, calls);
    expect(cold.tools).toEqual(plain.tools);
    expect(text(plain.results[0])).toMatch(/^Contents of http:\/\/127\.0\.0\.2:\d+\/page:\n[\s\S]*Hello/);
    expect(cold.results[0]).toEqual(plain.results[0]);
    const before = seen.length;
    const refused = await sandboxed(['--env', 'PATH=/usr/sbin'], args, boxEnv, calls);
    expect(refused.tools).toEqual(plain.tools);
    expect((refused.results[0] as { isError?: boolean }).isError).toBe(true);
    expect(seen.slice(before)).toEqual([]);
    // With no grant the sandbox has no network at all: the server finds no route.
    expect(text(refused.results[0])).toMatch(/connection issue/);
    const warm = await sandboxed(grant, args, boxEnv);
    process.stderr.write(
      `${FETCH} to first tools/list: direct uvx cold ${ms(plain)}; sandboxed cold ${ms(cold)}, warm ${ms(warm)}\n`,
    );
  }, 180_000);

  // KNOWN BUG, not fixed here: with Node.js on PATH, readabilipy (a dependency of the fetch
  // server) runs `npm install` into its own package directory at the first fetch (unpinned
  // ranges, from the npm registry). Directly, that lands in uv's cache and the page comes back;
  // sandboxed, the environment is read-only and the registry not granted, so every fetch fails
  // with "Error executing tool fetch", and the hint (--allow-net registry.npmjs.org) would not
  // help. `it.fails` turns into a failure once a sandboxed fetch gives the direct page.
  it.fails('KNOWN BUG: with Node.js on PATH, a sandboxed fetch returns the page a direct one does', async () => {
    const calls: Call[] = [['fetch', { url: `${origin}/page` }]];
    const plain = await direct(args, uvEnv, calls);
    expect((plain.results[0] as { isError?: boolean }).isError ?? false).toBe(false);
    const boxed = await sandboxed(['--allow-net', new URL(origin).host], args, boxEnv, calls);
    expect(boxed.results[0]).toEqual(plain.results[0]);
  }, 180_000);
});

describe(`${GIT} with a temp repository mounted`, () => {
  const repo = join(root, 'repo');

  beforeAll(() => {
    mkdirSync(repo, { mode: 0o755 });
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.invalid', ...args], {
        cwd: repo,
        env: {
          ...process.env,
          GIT_AUTHOR_DATE: '2026-01-02T03:04:05Z',
          GIT_COMMITTER_DATE: '2026-01-02T03:04:05Z',
        },
        stdio: 'ignore',
      });
    git('init', '-q', '-b', 'main');
    writeFileSync(join(repo, 'notes.txt'), 'first line\n', { mode: 0o644 });
    git('add', 'notes.txt');
    git('commit', '-q', '-m', 'first commit');
    writeFileSync(join(repo, 'notes.txt'), 'first line\nsecond line\n');
  });

  it('the same tools, status, log and diff as a direct uvx', async () => {
    const args = [GIT, '--repository', repo];
    const calls: Call[] = [
      ['git_status', { repo_path: repo }],
      ['git_log', { repo_path: repo }],
      ['git_diff_unstaged', { repo_path: repo }],
    ];
    const plain = await direct(args, uvEnv, calls);
    expect(text(plain.results[1])).toMatch(/first commit/);
    expect(text(plain.results[2])).toMatch(/\+second line/);
    const cold = await sandboxed(['--mount', `${repo}:ro`], args, boxEnv, calls);
    expect(cold.tools).toEqual(plain.tools);
    expect(cold.results).toEqual(plain.results);
    const warm = await sandboxed(['--mount', `${repo}:ro`], args, boxEnv);
    process.stderr.write(
      `${GIT} to first tools/list: direct uvx cold ${ms(plain)}; sandboxed cold ${ms(cold)}, warm ${ms(warm)}\n`,
    );
  }, 180_000);
});
