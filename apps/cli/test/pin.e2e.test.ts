import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAKE_API_KEY, startFakeE2B } from '@mcpsandbox/backend-e2b/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

// Pinned `npx -y` installs against a registry served from this test: a package whose `latest`
// moves to a new version (the postmark-mcp pattern), and a version whose tarball is swapped.

const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-pin-'));
// As root the sandbox runs as nobody, who must be able to enter the npx cache.
chmodSync(root, 0o755);
const cache = join(root, 'npm-cache');

interface Published {
  tarball: Buffer;
  integrity: string;
  shasum: string;
  time: string;
}
const versions = new Map<string, Published>();
let latest = '';
const served: string[] = [];
let server: Server;
let registry = '';

/** A package whose binary is an MCP server that says its version (and `flavor`) in serverInfo. */
function pack(version: string, flavor: string): Published {
  const dir = mkdtempSync(join(root, 'pkg-'));
  mkdirSync(join(dir, 'package'));
  writeFileSync(
    join(dir, 'package', 'package.json'),
    JSON.stringify({ name: 'pin-demo', version, bin: { 'pin-demo': 'server.js' } }),
  );
  writeFileSync(
    join(dir, 'package', 'server.js'),
    `#!/usr/bin/env node
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  const result = msg.method === 'initialize'
    ? { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'pin-demo', version: ${JSON.stringify(`${version}+${flavor}`)} } }
    : msg.method === 'tools/list' ? { tools: [] } : {};
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }) + '\\n');
});
`,
    { mode: 0o755 },
  );
  execFileSync('tar', ['-czf', join(dir, 'pkg.tgz'), '-C', dir, 'package']);
  const tarball = readFileSync(join(dir, 'pkg.tgz'));
  return {
    tarball,
    integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
    shasum: createHash('sha1').update(tarball).digest('hex'),
    time: `2026-0${versions.size + 1}-01T00:00:00.000Z`,
  };
}

function publish(version: string, flavor: string, asLatest = true): void {
  versions.set(version, pack(version, flavor));
  if (asLatest) latest = version;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    served.push(req.url ?? '');
    const tgz = /^\/pin-demo\/-\/pin-demo-(.+)\.tgz$/.exec(req.url ?? '');
    if (tgz) {
      const found = versions.get(tgz[1] as string);
      if (!found) return res.writeHead(404).end();
      return res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(found.tarball);
    }
    if (req.url !== '/pin-demo') return res.writeHead(404).end('{}');
    const body = {
      name: 'pin-demo',
      'dist-tags': { latest },
      versions: Object.fromEntries(
        [...versions].map(([v, p]) => [
          v,
          {
            name: 'pin-demo',
            version: v,
            bin: { 'pin-demo': 'server.js' },
            dist: {
              tarball: `${registry}pin-demo/-/pin-demo-${v}.tgz`,
              integrity: p.integrity,
              shasum: p.shasum,
            },
          },
        ]),
      ),
      time: Object.fromEntries([...versions].map(([v, p]) => [v, p.time])),
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  // On loopback, but not 127.0.0.1: the sandbox's proxy settings exempt that address (it is the
  // sandbox's own loopback there), so npm inside would never ask the proxy for it.
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  registry = `http://127.0.0.2:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

function cli(args: string[], state: string, extraEnv: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/',
          XDG_STATE_HOME: state,
          ...extraEnv,
        },
        timeout: 170_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Where a test runs the server: local by default, or e2b against the offline fake of E2B. */
interface Where {
  readonly args: readonly string[];
  readonly env: Record<string, string>;
}
const LOCAL: Where = { args: [], env: {} };

const inspect = (spec: string, state: string, where: Where = LOCAL) =>
  cli(
    [
      'inspect',
      '--json',
      ...where.args,
      '--backend-option',
      `npmRegistry=${registry}`,
      '--backend-option',
      `npmCacheDir=${cache}`,
      '--',
      'npx',
      '-y',
      spec,
    ],
    state,
    where.env,
  );
/** `run`, with a client that sends initialize and waits: the sandbox is created, or refused. */
function run(spec: string, state: string, where: Where = LOCAL) {
  const child = spawn(
    process.execPath,
    [
      BIN,
      'run',
      ...where.args,
      '--backend-option',
      `npmRegistry=${registry}`,
      '--backend-option',
      `npmCacheDir=${cache}`,
      '--',
      'npx',
      '-y',
      spec,
    ],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/',
        XDG_STATE_HOME: state,
        ...where.env,
      },
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    if (stdout.includes('\n')) child.stdin.end();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdin.write(
    `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`,
  );
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const runningVersion = (stdout: string) =>
  (JSON.parse(stdout) as { server: { version: string } }).server.version;

describe('pinned npx -y installs (local backend, a registry on loopback)', () => {
  const state = join(root, 'state');

  it('pins on first install, refuses a new latest until `update`, then runs the new version', {
    timeout: 300_000,
  }, async () => {
    publish('1.0.0', 'good');
    const first = await inspect('pin-demo', state);
    expect(first.code).toBe(0);
    expect(runningVersion(first.stdout)).toBe('1.0.0+good');
    expect(first.stderr).toContain('pinned pin-demo@1.0.0 (sha512-');
    const lock = JSON.parse(readFileSync(join(state, 'mcp-sandbox', 'npx-lock.json'), 'utf8'));
    expect(lock.pins).toEqual([
      expect.objectContaining({
        registry,
        spec: 'pin-demo',
        name: 'pin-demo',
        version: '1.0.0',
        integrity: versions.get('1.0.0')?.integrity,
      }),
    ]);

    // A new version behind `latest`, as a hijacked maintainer account would publish it. (Fails before
    // pinned installs: the start below installed and ran 1.1.0, as the unpinned control still does.)
    publish('1.1.0', 'hostile');
    served.length = 0;
    const refused = await run('pin-demo', state);
    expect(refused.code).toBe(125);
    expect(refused.stderr).toContain(
      'pin-demo now resolves to pin-demo@1.1.0 (published 2026-02-01), but 1.0.0 is pinned',
    );
    expect(refused.stderr).toContain('mcp-sandbox update pin-demo');
    // The client's initialize is answered with an error by mcp-sandbox, never by a server.
    expect(refused.stdout).toContain('"error"');
    // Refused before anything was downloaded.
    expect(served.filter((url) => url.endsWith('.tgz'))).toEqual([]);
    // Control: without the pin, the same command installs and runs the new version.
    const unpinned = await inspect('pin-demo', join(root, 'state-elsewhere'));
    expect(runningVersion(unpinned.stdout)).toBe('1.1.0+hostile');

    const update = await cli(['update', 'pin-demo'], state);
    expect(update.code).toBe(0);
    expect(update.stdout).toContain(`pin-demo from ${registry}: 1.0.0 (sha512-`);
    expect(update.stdout).toMatch(/published 2026-01-01\) → 1\.1\.0 \(sha512-.{12}…, published 2026-02-01\)/);
    const accepted = await inspect('pin-demo', state);
    expect(accepted.code).toBe(0);
    expect(runningVersion(accepted.stdout)).toBe('1.1.0+hostile');
  });

  it('refuses a changed tarball of the pinned version, and pins an explicit version the same way', {
    timeout: 300_000,
  }, async () => {
    publish('1.1.0', 'swapped');
    const swapped = await run('pin-demo', state);
    expect(swapped.code).toBe(125);
    expect(swapped.stderr).toContain(`${registry} now serves a different tarball for pin-demo@1.1.0`);

    const explicit = await inspect('pin-demo@1.0.0', state);
    expect(explicit.code).toBe(0);
    expect(runningVersion(explicit.stdout)).toBe('1.0.0+good');
    expect(explicit.stderr).toContain('pinned pin-demo@1.0.0');
    publish('1.0.0', 'rewritten', false);
    const rewritten = await run('pin-demo@1.0.0', state);
    expect(rewritten.code).toBe(125);
    expect(rewritten.stderr).toContain('different tarball for pin-demo@1.0.0');

    const none = await cli(['update', 'no-such-package'], state);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no pinned package named no-such-package');
  });

  it('the e2b backend pins the same way (against the offline fake of E2B)', {
    timeout: 300_000,
  }, async () => {
    const fake = await startFakeE2B();
    try {
      const e2b: Where = {
        args: ['--backend', 'e2b'],
        env: { E2B_API_KEY: FAKE_API_KEY, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl },
      };
      const e2bState = join(root, 'state-e2b');
      publish('2.0.0', 'vm');
      const first = await inspect('pin-demo', e2bState, e2b);
      expect(first.code).toBe(0);
      expect(runningVersion(first.stdout)).toBe('2.0.0+vm');
      expect(first.stderr).toContain('pinned pin-demo@2.0.0');
      publish('2.1.0', 'hostile');
      const refused = await run('pin-demo', e2bState, e2b);
      expect(refused.code).toBe(125);
      expect(refused.stderr).toContain('pin-demo now resolves to pin-demo@2.1.0');
    } finally {
      await fake.close();
    }
  });
});
