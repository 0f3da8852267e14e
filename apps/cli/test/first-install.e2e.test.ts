import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

// First `npx -y` installs of packages with install-time builds, against a registry served from
// this test on loopback (not 127.0.0.1, which the sandbox's proxy settings exempt).

const root = mkdtempSync(join(tmpdir(), 'first-install-e2e-'));
// As root the sandbox runs as nobody, who must be able to enter the npx cache.
chmodSync(root, 0o755);

interface Package {
  readonly manifest: Record<string, unknown>;
  readonly tarball: Buffer;
  readonly shrinkwrap?: boolean;
}
const packages = new Map<string, Package>();
let tarballs = 0;
/** The gate a slow install waits on (its script asks the registry host, which it may reach). */
let gateOpen = false;
/** Root's own npm cache, as a devcontainer's or CI's npx fills it. */
const ROOT_CACHE = join(root, 'root-npm-cache');
/** A package of root's that the registry serves only with credentials; its tarball's secret. */
const PRIVATE = 'corp-secret';
const PRIVATE_TEXT = 'corp secret 4242';
let privateRefused = 0;
/** A host folder a hostile optional dependency points its own directory at before failing. */
const CANARY = join(root, 'canary');
let server: Server;
let registry = '';

/** An MCP server that answers initialize and tools/list, saying in its version what it found. */
const SERVER = `#!/usr/bin/env node
let found = 'none';
try { require('opt-native'); found = 'opt-native'; } catch {}
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  const result = msg.method === 'initialize'
    ? { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'first-install', version: found } }
    : msg.method === 'tools/list' ? { tools: [] } : {};
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }) + '\\n');
});
`;

/**
 * What a native build does when it has no headers: asks nodejs.org for them (through the proxy
 * the sandbox sets, as node-gyp does) and fails as node-gyp fails.
 */
const FETCH_HEADERS = `
const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY || process.env.http_proxy || 'http://127.0.0.1:3128');
const req = http.request({ host: proxy.hostname, port: proxy.port, path: 'http://nodejs.org/download/release/' + process.version + '/node-' + process.version + '-headers.tar.gz' });
const fail = (why) => { console.error('gyp ERR! stack Error: ' + why); console.error('gyp ERR! not ok'); process.exit(1); };
req.on('response', (r) => { r.resume(); fail('headers download failed: HTTP ' + r.statusCode); });
req.on('error', (e) => fail('headers download failed: ' + e.message));
req.end();
`;

/** A build that looks for Node's headers as node-gyp does: npm_config_nodedir, else download. */
const HEADER_LOOKUP = `
const fs = require('node:fs');
const dir = process.env.npm_config_nodedir;
const header = dir && dir + '/include/node/node_version.h';
if (header && fs.existsSync(header)) {
  const text = fs.readFileSync(header, 'utf8');
  const major = /#define NODE_MAJOR_VERSION (\\d+)/.exec(text)[1];
  if (major !== process.versions.node.split('.')[0]) { console.error('gyp ERR! headers of another Node'); process.exit(1); }
  try { fs.writeFileSync(header, 'changed'); console.error('HEADERS WRITABLE'); process.exit(1); } catch {}
  fs.writeFileSync(__dirname + '/built.txt', 'built against ' + header);
  process.exit(0);
}
${FETCH_HEADERS}
`;

function publish(name: string, manifest: Record<string, unknown>, files: Record<string, string>): void {
  const dir = mkdtempSync(join(root, 'pkg-'));
  mkdirSync(join(dir, 'package'));
  const full = { name, version: '1.0.0', ...manifest };
  writeFileSync(join(dir, 'package', 'package.json'), JSON.stringify(full));
  for (const [file, text] of Object.entries(files)) {
    writeFileSync(join(dir, 'package', file), text, { mode: 0o755 });
  }
  execFileSync('tar', ['-czf', join(dir, 'pkg.tgz'), '-C', dir, 'package']);
  const shrinkwrap = 'npm-shrinkwrap.json' in files;
  packages.set(name, { manifest: full, tarball: readFileSync(join(dir, 'pkg.tgz')), shrinkwrap });
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = req.url ?? '';
    if (url.endsWith('/gate')) return res.writeHead(gateOpen ? 200 : 503).end();
    const tgz = /^\/([a-z-]+)\/-\/[a-z-]+-1\.0\.0\.tgz$/.exec(url);
    // A version's own document, as the public registry serves it (the seeding asks these).
    const versionDoc = /^\/([a-z-]+)\/1\.0\.0$/.exec(url);
    const found = packages.get(tgz?.[1] ?? versionDoc?.[1] ?? url.slice(1));
    if (!found) return res.writeHead(404).end('{}');
    // A private package: served only with credentials (root's npm has them, the sandbox not).
    if (found.manifest.name === PRIVATE && !req.headers.authorization) {
      if (tgz) privateRefused++;
      return res.writeHead(404).end('{}');
    }
    if (tgz) tarballs++;
    if (tgz) return res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(found.tarball);
    const name = found.manifest.name as string;
    const version = {
      ...found.manifest,
      ...(found.manifest.scripts ? { hasInstallScript: true } : {}),
      ...(found.shrinkwrap ? { _hasShrinkwrap: true, hasShrinkwrap: true } : {}),
      dist: {
        tarball: `${registry}${name}/-/${name}-1.0.0.tgz`,
        integrity: `sha512-${createHash('sha512').update(found.tarball).digest('base64')}`,
        shasum: createHash('sha1').update(found.tarball).digest('hex'),
      },
    };
    const body = versionDoc
      ? version
      : { name, 'dist-tags': { latest: '1.0.0' }, versions: { '1.0.0': version } };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  registry = `http://127.0.0.2:${(server.address() as AddressInfo).port}/`;
  publish(
    'opt-server',
    { bin: { 'opt-server': 'server.js' }, optionalDependencies: { 'opt-native': '1.0.0' } },
    { 'server.js': SERVER },
  );
  publish('opt-native', { scripts: { install: 'node build.js' } }, { 'build.js': FETCH_HEADERS });
  publish(
    'hdr-server',
    { bin: { 'hdr-server': 'server.js' }, scripts: { install: 'node build.js' } },
    { 'server.js': SERVER, 'build.js': HEADER_LOOKUP },
  );
  publish(
    'cached-server',
    { bin: { 'cached-server': 'server.js' }, scripts: { install: 'node probe.js' } },
    {
      'server.js': SERVER,
      // The install script must not find root's cache, where the fetch saw it or on the host.
      'probe.js': `const fs = require('node:fs');
for (const p of ['/run/mcp-sandbox/npm-cache-ro', '/run/mcp-sandbox/npm-cache', ${JSON.stringify(ROOT_CACHE)}]) {
  if (fs.existsSync(p)) { console.error('CACHE VISIBLE ' + p); process.exit(1); }
}`,
    },
  );
  publish('plain-server', { bin: { 'plain-server': 'server.js' } }, { 'server.js': SERVER });
  publish(
    'slow-server',
    { bin: { 'slow-server': 'server.js' }, scripts: { install: 'node wait.js' } },
    {
      'server.js': SERVER,
      // A long first install: waits until the test opens the gate on the registry's host.
      'wait.js': `const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY || process.env.http_proxy);
const gate = require('./gate.json').url;
// Bounded (2 minutes): a registry that is gone (the test ended) fails the install, never hangs it.
let tries = 0;
const again = () => (++tries > 600 ? process.exit(1) : setTimeout(ask, 200));
const ask = () => http.request({ host: proxy.hostname, port: proxy.port, path: gate }, (r) => {
  r.resume();
  if (r.statusCode === 200) process.exit(0);
  again();
}).on('error', again).end();
ask();`,
      'gate.json': JSON.stringify({ url: `${registry}gate` }),
    },
  );
  publish(
    'evil-opt-server',
    { bin: { 'evil-opt-server': 'server.js' }, optionalDependencies: { 'evil-native': '1.0.0' } },
    { 'server.js': SERVER },
  );
  publish(
    'evil-native',
    { scripts: { install: 'node build.js' } },
    {
      // Its own directory becomes a symlink to a host folder, then the build "fails": the host
      // removing the failed optional package must remove the link, never what it points at.
      'build.js': `const fs = require('node:fs');
process.chdir('/');
fs.rmSync(__dirname, { recursive: true, force: true });
fs.symlinkSync(${JSON.stringify(CANARY)}, __dirname);
process.exit(1);`,
    },
  );
  publish(PRIVATE, {}, { 'secret.txt': PRIVATE_TEXT });
  const secret = packages.get(PRIVATE)?.tarball as Buffer;
  // The shrinkwrap hole: a public package whose npm-shrinkwrap.json names the private tarball by
  // its integrity, and whose install script prints whatever of it reached the install.
  publish(
    'wrap-server',
    {
      bin: { 'wrap-server': 'server.js' },
      dependencies: { [PRIVATE]: '1.0.0' },
      scripts: { install: 'node leak.js' },
    },
    {
      'server.js': SERVER,
      'leak.js': `const fs = require('node:fs');
let text;
try { text = fs.readFileSync(require.resolve('${PRIVATE}/secret.txt'), 'utf8'); } catch { process.exit(0); }
// npm shows a script's output when it fails.
console.error('LEAKED ' + text);
process.exit(1);`,
      'npm-shrinkwrap.json': JSON.stringify({
        name: 'wrap-server',
        version: '1.0.0',
        lockfileVersion: 3,
        requires: true,
        packages: {
          '': { name: 'wrap-server', version: '1.0.0', dependencies: { [PRIVATE]: '1.0.0' } },
          [`node_modules/${PRIVATE}`]: {
            version: '1.0.0',
            resolved: `${registry}${PRIVATE}/-/${PRIVATE}-1.0.0.tgz`,
            integrity: `sha512-${createHash('sha512').update(secret).digest('base64')}`,
          },
        },
      }),
    },
  );
  publish(
    'broken-server',
    { bin: { 'broken-server': 'server.js' }, dependencies: { 'broken-native': '1.0.0' } },
    { 'server.js': SERVER },
  );
  // Its dependency does not exist: the resolve fails.
  publish(
    'orphan-server',
    { bin: { 'orphan-server': 'server.js' }, dependencies: { 'no-such-dependency': '1.0.0' } },
    { 'server.js': SERVER },
  );
  publish(
    'broken-native',
    { scripts: { install: 'node build.js' } },
    {
      'build.js':
        "console.error('gyp ERR! build error: native.cc:1: error: expected declaration'); process.exit(1);",
    },
  );
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

/** `inspect --json` of `npx -y spec` with a fresh state and install cache of its own. */
function inspect(spec: string, extra: readonly string[] = [], extraEnv: Record<string, string> = {}) {
  const state = mkdtempSync(join(root, 'state-'));
  chmodSync(state, 0o755);
  const args = [
    BIN,
    'inspect',
    '--json',
    '--backend-option',
    `npmRegistry=${registry}`,
    '--backend-option',
    `npmCacheDir=${join(state, 'npx')}`,
    ...extra,
    '--',
    'npx',
    '-y',
    spec,
  ];
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/',
    XDG_STATE_HOME: state,
    ...extraEnv,
  };
  return new Promise<{ code: number; stdout: string; stderr: string; cacheRoot: string }>((resolve) => {
    execFile(process.execPath, args, { env, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr, cacheRoot: join(state, 'npx') }),
    );
  });
}

const serverVersion = (stdout: string) =>
  (JSON.parse(stdout) as { server: { version: string } }).server.version;

describe('first installs of packages that build at install time (local backend)', () => {
  // Before: npm rebuild ran the optional dependency's failing script as a required one; the
  // install failed, and the hint said --install-allow-net nodejs.org.
  it('skips an optional dependency whose build fails, as npm does, and the server starts', {
    timeout: 150_000,
  }, async () => {
    const result = await inspect('opt-server@1.0.0');
    expect(result.stderr).not.toContain('--install-allow-net');
    expect(result.code, result.stderr).toBe(0);
    expect(serverVersion(result.stdout)).toBe('none');
    expect(result.stderr).toMatch(/skipped the optional dependency opt-native: its install script failed/);
  });

  it('removing a failed optional package never follows a link its script left in its place', {
    timeout: 150_000,
  }, async () => {
    mkdirSync(CANARY, { recursive: true });
    writeFileSync(join(CANARY, 'keep'), 'keep');
    const result = await inspect('evil-opt-server@1.0.0');
    // Control: the script ran and failed, and the package was skipped.
    expect(result.stderr).toMatch(/skipped the optional dependency evil-native/);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(CANARY, 'keep'), 'utf8')).toBe('keep');
  });

  // Before: the install step did not get the host's headers (nodedir), so a native build asked
  // nodejs.org for them, was refused, and the install failed.
  it('builds against the headers installed with the host node, read-only, without downloading them', {
    timeout: 150_000,
  }, async () => {
    const result = await inspect('hdr-server@1.0.0');
    expect(result.stderr).not.toContain('HEADERS WRITABLE');
    expect(result.stderr).not.toContain('nodejs.org');
    expect(result.code, result.stderr).toBe(0);
    expect(serverVersion(result.stdout)).toBe('none');
  });

  // Before: the first line said only "installing … failed (npm exited 1)".
  it("a required build that fails: the first line names the package, the step and npm's error", {
    timeout: 150_000,
  }, async () => {
    const result = await inspect('broken-server@1.0.0');
    expect(result.code).not.toBe(0);
    const failure = result.stderr.slice(result.stderr.indexOf('installing broken-server@1.0.0 failed'));
    const [first, ...rest] = failure.split('\n');
    expect(first).toMatch(
      / in its build step \(npm rebuild: .*\): an install script of broken-native exited with code 1/,
    );
    expect(rest.join('\n')).toMatch(/^npm said:\n.*\n(.*\n)*.*gyp ERR! build error: native\.cc:1/);
    expect(failure).not.toContain('--install-allow-net');
  });

  // Before: nothing said the install goes on after the client gives up, and neither ls nor
  // doctor showed it or the sandbox's own install cache.
  it('a long first install: stderr says it goes on, ls and doctor show it, and the next start is warm', {
    timeout: 150_000,
  }, async () => {
    const home = mkdtempSync(join(root, 'home-'));
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/',
      XDG_STATE_HOME: join(home, 'state'),
      XDG_CACHE_HOME: join(home, 'cache'),
    };
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [BIN, ...args], { env, timeout: 120_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
        );
      });
    const args = ['--backend-option', `npmRegistry=${registry}`, '--', 'npx', '-y', 'slow-server@1.0.0'];
    const first = spawn(process.execPath, [BIN, 'run', ...args], { env });
    let stderr = '';
    first.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise((resolve) => first.on('close', resolve));
    first.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`,
    );
    try {
      // The install is under way (its script waits at the gate).
      for (let i = 0; i < 600 && !stderr.includes('goes on if the client gives up'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(stderr).toContain('installing slow-server@1.0.0');
      expect(stderr).toContain('goes on if the client gives up');
      // The background worker records itself a moment after that line (its own process starts
      // first): ls and doctor are asked until they show it, within a bound.
      const shows = async (args: string[], pattern: RegExp) => {
        let said = '';
        for (let i = 0; i < 50 && !pattern.test(said); i++) {
          if (i > 0) await new Promise((resolve) => setTimeout(resolve, 200));
          said = (await cli(args)).stdout;
        }
        return said;
      };
      const inProgress = /installs in progress.*\n {2}slow-server@1\.0\.0 {2}since \S+, process \d+/;
      expect(await shows(['ls'], inProgress)).toMatch(inProgress);
      const installing = new RegExp(
        `sandbox install cache.*${join(home, 'cache', 'mcp-sandbox', 'npm')} \\(.*, 0 entries\\); installing now: slow-server@1\\.0\\.0`,
      );
      expect(await shows(['doctor'], installing)).toMatch(installing);
      // The client gives up; the install goes on and finishes once the gate opens.
      first.kill('SIGKILL');
      await exited;
    } finally {
      gateOpen = true;
      first.kill('SIGKILL');
    }
    for (let i = 0; i < 600; i++) {
      const now = await cli(['ls']);
      if (!now.stdout.includes('installs in progress')) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const doctor = await cli(['doctor']);
    expect(doctor.stdout).toMatch(/sandbox install cache.*, 1 entries\)/);
    const warm = await cli(['inspect', '--json', ...args]);
    expect(warm.code, warm.stderr).toBe(0);
    expect(warm.stderr).not.toContain('installing slow-server');
  });
});

/** Fills root's own npm cache as direct `npx` runs would (once): with `specs`, root's credentials given. */
let rootCacheFilled: Promise<void> | undefined;
function fillRootCache(): Promise<void> {
  const project = mkdtempSync(join(root, 'direct-'));
  const npm = (spec: string, auth: readonly string[] = []) =>
    new Promise<void>((resolve, reject) =>
      execFile(
        'npm',
        [
          'install',
          spec,
          '--prefix',
          project,
          '--cache',
          ROOT_CACHE,
          '--registry',
          registry,
          '--ignore-scripts',
          ...auth,
        ],
        { env: { PATH: process.env.PATH ?? '', HOME: root } },
        (error, _out, stderr) => (error ? reject(new Error(stderr)) : resolve()),
      ),
    );
  const host = new URL(registry).host;
  rootCacheFilled ??= npm('cached-server@1.0.0')
    .then(() => npm('plain-server@1.0.0'))
    .then(() => npm(`${PRIVATE}@1.0.0`, [`--//${host}/:_authToken=root-token`]))
    .then(() => chmodSync(ROOT_CACHE, 0o755));
  return rootCacheFilled;
}

/** The one complete entry of an install cache. */
function onlyEntry(cacheRoot: string): string {
  const entries = readdirSync(cacheRoot).filter((name) => /^[0-9a-f]{24}$/.test(name));
  expect(entries).toHaveLength(1);
  return join(cacheRoot, entries[0] as string);
}

/** Every entry of root's cache with its size, time, mode and owner: what no install may change. */
const rootCacheListing = () =>
  execFileSync('find', [ROOT_CACHE, '-printf', '%p %s %T@ %m %u\\n'], { encoding: 'utf8' });

describe.runIf(process.getuid?.() === 0)("as root: root's npm cache (installs run as another uid)", () => {
  // Before: "npm's cache … is owned by uid 0, not by uid 65534: installs download into a private
  // cache instead", and every tarball downloaded again.
  it('a first install takes what the cache holds, downloads none of it, says nothing and writes nothing there', {
    timeout: 150_000,
  }, async () => {
    await fillRootCache();
    const before = rootCacheListing();
    const downloaded = tarballs;
    const result = await inspect('cached-server@1.0.0', [], { npm_config_cache: ROOT_CACHE });
    expect(result.code, result.stderr).toBe(0);
    expect(tarballs, result.stderr).toBe(downloaded);
    expect(result.stderr).not.toContain('private cache');
    expect(result.stderr).not.toContain('owned by uid');
    // Its install script saw neither root's cache nor the install's own copy.
    expect(result.stderr).not.toContain('CACHE VISIBLE');
    expect(rootCacheListing()).toBe(before);
    // The install's own cache was removed before its install script ran: never in the entry.
    expect(readdirSync(onlyEntry(result.cacheRoot))).not.toContain('npm-seed');
  });

  // Without install scripts nothing runs after `npm ci`: the install's own cache is removed once
  // the start has its answer, and never kept in the entry.
  it('a package without install scripts: the install keeps nothing of its own cache', {
    timeout: 150_000,
  }, async () => {
    await fillRootCache();
    const downloaded = tarballs;
    const result = await inspect('plain-server@1.0.0', [], { npm_config_cache: ROOT_CACHE });
    expect(result.code, result.stderr).toBe(0);
    expect(tarballs, result.stderr).toBe(downloaded);
    const entry = onlyEntry(result.cacheRoot);
    for (let i = 0; i < 100 && readdirSync(entry).includes('npm-seed'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(readdirSync(entry)).not.toContain('npm-seed');
  });

  // A package's shrinkwrap names, by its integrity, a private tarball root's cache holds: only
  // what the registry serves to anyone is taken from the cache, so the install asks the registry
  // for it, is refused, and the script never reads it.
  it("a shrinkwrap naming a private tarball of root's cache by its integrity does not get it", {
    timeout: 150_000,
  }, async () => {
    await fillRootCache();
    const before = rootCacheListing();
    const refused = privateRefused;
    const result = await inspect('wrap-server@1.0.0', [], { npm_config_cache: ROOT_CACHE });
    expect(result.stderr).not.toContain(PRIVATE_TEXT);
    expect(result.stderr).not.toContain('LEAKED');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('installing wrap-server@1.0.0 failed in its download step');
    // Control: the shrinkwrap was followed, and the registry refused the tarball without credentials.
    expect(privateRefused).toBeGreaterThan(refused);
    expect(rootCacheListing()).toBe(before);
  });

  // npm's `ci` starts while the resolve runs, waiting for the host (npm-gate.js): a failed resolve
  // is the error told, and the waiting npm does not outlive it.
  it('a resolve that fails: its error is told, and the npm started early for the install is gone', {
    timeout: 150_000,
  }, async () => {
    await fillRootCache();
    const result = await inspect('orphan-server@1.0.0', [], { npm_config_cache: ROOT_CACHE });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('installing orphan-server@1.0.0 failed in its download step');
    expect(result.stderr).toContain('no-such-dependency');
    const running = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
    expect(running).not.toMatch(/npm-gate\.js/);
  });
});
