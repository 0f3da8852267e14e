import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Call, direct, sandboxed, text, userEnv } from './pypi-helpers.js';

// A FastMCP server of our own, written with the official Python SDK (`mcp`, pinned, from PyPI),
// packaged as a wheel and served with the SDK's wheels from a PEP 503 index of the test's (on
// loopback, not 127.0.0.1: the sandbox's proxy settings keep that address for the sandbox):
// installed and run by `uvx --from fastmcp-demo==1.0 fastmcp-demo`, directly and sandboxed.

const MCP = 'mcp==1.30.0';
const BUILD = fileURLToPath(new URL('./fixtures/fastmcp-demo.py', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-uvx-fastmcp-'));
chmodSync(root, 0o755);
const wheels = join(root, 'wheels');
const files = new Map<string, Buffer>();
let index: Server;
let indexUrl = '';

/** PEP 503's normalized project name of a wheel file. */
const project = (file: string) => (file.split('-')[0] ?? '').toLowerCase().replace(/[-_.]+/g, '-');

beforeAll(async () => {
  mkdirSync(wheels);
  // The SDK and what it needs, as wheels for this machine's Python, from PyPI.
  execFileSync(
    'python3',
    ['-m', 'pip', 'download', '--quiet', '--only-binary=:all:', '--dest', wheels, MCP],
    {
      env: userEnv,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 170_000,
    },
  );
  execFileSync('python3', [BUILD, wheels, '1.0', MCP], { stdio: 'ignore' });
  for (const file of readdirSync(wheels)) files.set(file, readFileSync(join(wheels, file)));
  index = createServer((req, res) => {
    const url = req.url ?? '';
    const page = /^\/simple\/([a-z0-9-]+)\/$/.exec(url);
    if (page) {
      const links = [...files.keys()]
        .filter((file) => project(file) === page[1])
        .map((file) => {
          const sha = createHash('sha256')
            .update(files.get(file) as Buffer)
            .digest('hex');
          return `<a href="/files/${file}#sha256=${sha}">${file}</a>`;
        });
      if (links.length === 0) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(`<!DOCTYPE html><html><body>${links.join('\n')}</body></html>`);
    }
    const file = /^\/files\/([^/]+)$/.exec(url);
    const body = file ? files.get(file[1] as string) : undefined;
    if (!body) return res.writeHead(404).end();
    return res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
  });
  await new Promise<void>((resolve) => index.listen(0, '127.0.0.2', resolve));
  indexUrl = `http://127.0.0.2:${(index.address() as AddressInfo).port}/simple`;
}, 180_000);

afterAll(async () => {
  index?.closeAllConnections();
  await new Promise<void>((resolve) => (index ? index.close(() => resolve()) : resolve()));
  rmSync(root, { recursive: true, force: true });
});

describe(`a FastMCP server (${MCP}) from a loopback index`, () => {
  it('the same tools and results as a direct uvx, pinned, and warm with no resolution', async () => {
    const args = ['--from', 'fastmcp-demo==1.0', 'fastmcp-demo'];
    const calls: Call[] = [
      ['add', { a: 2, b: 40 }],
      ['shout', { text: 'héllo' }],
      ['add', { a: 'not a number', b: 1 }],
    ];
    const plain = await direct(
      args,
      { UV_DEFAULT_INDEX: indexUrl, UV_CACHE_DIR: join(root, 'uv-cache') },
      calls,
    );
    expect(text(plain.results[0])).toBe('42');
    expect(text(plain.results[1])).toBe('HÉLLO!');
    expect((plain.results[2] as { isError?: boolean }).isError).toBe(true);
    const env = {
      UV_DEFAULT_INDEX: indexUrl,
      XDG_CACHE_HOME: join(root, 'cache'),
      MCP_SANDBOX_PIN_LOCK: join(root, 'pins.json'),
    };
    const cold = await sandboxed([], args, env, calls);
    expect(cold.stderr).toContain(`pinned fastmcp-demo==1.0 from ${indexUrl}`);
    expect(cold.tools).toEqual(plain.tools);
    expect(cold.results).toEqual(plain.results);
    const warm = await sandboxed([], args, env, calls);
    expect(warm.stderr).not.toMatch(/resolving|installing/);
    expect(warm.results).toEqual(plain.results);
    const ms = (s: { ms: number }) => `${Math.round(s.ms)} ms`;
    process.stderr.write(
      `fastmcp-demo (${MCP}) to first tools/list: direct uvx cold ${ms(plain)}; sandboxed cold ${ms(cold)}, warm ${ms(warm)}\n`,
    );
  }, 180_000);
});
