import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { line, spawnBin, stdoutMessages, waitFor } from './helpers.js';

// `uvx` servers from a PEP 503 index served by this test: an sdist whose build script is the
// attacker, a wheel swapped under the same version, and a warm start that asks the index nothing.
// On loopback, but not 127.0.0.1: the sandbox's proxy settings exempt that address.

/** A CPython older than Debian's 3.11, to play the host's own python3 (pyenv's, where there is one). */
const OLDER_PYTHON = '/root/.pyenv/versions/3.10.13/bin/python3';
const DISTS = fileURLToPath(new URL('./fixtures/python-dists.py', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-uvx-'));
// As root the sandbox runs as nobody, who must be able to enter the install cache.
chmodSync(root, 0o755);
const home = join(root, 'home');
const cache = join(root, 'cache');
const lock = join(root, 'pins.json');
const secret = join(home, 'secret.txt');
const hostPlant = join(tmpdir(), `mcp-sandbox-uvx-planted-${randomBytes(6).toString('hex')}`);
const files = new Map<string, Buffer>();
const projects = new Map<string, string[]>();
const served: string[] = [];
let index: Server;
let indexUrl = '';
let stolen = 0;
let exfil: TcpServer;
let exfilPort = 0;
/** Files of `slow_demo` are held until the gate opens: a first install that takes its time. */
let gateOpen = false;
let slowAsked = 0;

function build(
  kind: 'wheel' | 'sdist',
  name: string,
  version: string,
  extra: string,
  requiresPython?: string,
): void {
  const out = mkdtempSync(join(root, 'dist-'));
  const args = [DISTS, kind, out, name, version, extra, ...(requiresPython ? [requiresPython] : [])];
  const path = execFileSync('python3', args, { encoding: 'utf8' }).trim();
  const file = path.slice(path.lastIndexOf('/') + 1);
  files.set(file, readFileSync(path));
  const list = projects.get(name) ?? [];
  if (!list.includes(file)) list.push(file);
  projects.set(name, list);
}

beforeAll(async () => {
  mkdirSync(home, { recursive: true });
  writeFileSync(secret, 'the-users-secret');
  index = createHttpServer((req, res) => {
    const url = req.url ?? '';
    served.push(url);
    // A project whose index page sends the installer elsewhere (another port, as a mirror would).
    if (url === '/simple/redirect-demo/') {
      return res.writeHead(302, { location: `http://127.0.0.2:${exfilPort}/simple/redirect-demo/` }).end();
    }
    const project = /^\/simple\/([a-z0-9-]+)\/$/.exec(url);
    if (project) {
      const list = projects.get(project[1] as string);
      if (!list) return res.writeHead(404).end();
      const links = list.map((file) => {
        const sha = createHash('sha256')
          .update(files.get(file) as Buffer)
          .digest('hex');
        return `<a href="/files/${file}#sha256=${sha}">${file}</a>`;
      });
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end(`<!DOCTYPE html><html><body>${links.join('\n')}</body></html>`);
    }
    const file = /^\/files\/([^/]+)$/.exec(url);
    const body = file ? files.get(file[1] as string) : undefined;
    if (!body) return res.writeHead(404).end();
    const held = file?.[1]?.startsWith('slow_demo') === true;
    if (held) slowAsked++;
    const send = () => {
      if (held && !gateOpen) return void setTimeout(send, 100);
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
    };
    return send();
  });
  await new Promise<void>((resolve) => index.listen(0, '127.0.0.2', resolve));
  indexUrl = `http://127.0.0.2:${(index.address() as AddressInfo).port}/simple`;
  exfil = createTcpServer((socket) => {
    stolen++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => exfil.listen(0, '127.0.0.2', resolve));
  exfilPort = (exfil.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => exfil.close(() => resolve()));
  index.closeAllConnections();
  await new Promise<void>((resolve) => index.close(() => resolve()));
  rmSync(root, { recursive: true, force: true });
  rmSync(hostPlant, { force: true });
});

interface Started {
  readonly code: number | null;
  readonly stderr: string;
  readonly info?: {
    flavor: string;
    built: Record<string, unknown>;
    planted: string[];
    probe: Record<string, string>;
  };
  readonly tools?: unknown;
}

/** The environment a client starts the bridge with: this test's home, cache, pin lock and index. */
function userEnv(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    XDG_CACHE_HOME: cache,
    MCP_SANDBOX_PIN_LOCK: lock,
    UV_DEFAULT_INDEX: indexUrl,
  };
}

/** `mcp-sandbox run [runArgs] -- uvx <args>`: initialize and tools/list, then stdin closed. */
async function start(
  args: readonly string[],
  env: Record<string, string> = {},
  cwd?: string,
  runArgs: readonly string[] = [],
): Promise<Started> {
  const run = spawnBin(['run', ...runArgs, '--', 'uvx', ...args], { ...userEnv(), ...env }, cwd);
  run.child.stdin.write(
    line({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  );
  run.child.stdin.write(line({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  run.child.stdin.write(line({ jsonrpc: '2.0', id: 2, method: 'tools/list' }));
  let exited = false;
  void run.result.then(() => {
    exited = true;
  });
  await waitFor(
    () => exited || stdoutMessages(run.stdoutSoFar()).some((m) => m.id === 2),
    50_000,
    'the tools/list answer',
  );
  run.child.stdin.end();
  const result = await run.result;
  const messages = stdoutMessages(result.stdout);
  const init = messages.find((m) => m.id === 1)?.result as { serverInfo?: { version?: string } } | undefined;
  const tools = (messages.find((m) => m.id === 2)?.result as { tools?: unknown } | undefined)?.tools;
  return {
    code: result.code,
    stderr: result.stderr,
    ...(init?.serverInfo?.version ? { info: JSON.parse(init.serverInfo.version) } : {}),
    ...(tools ? { tools } : {}),
  };
}

describe('uvx install step (local)', () => {
  it('runs an sdist whose build script tries the home, the network, the uv cache and a plant for the next server, and none succeeds', async () => {
    build(
      'sdist',
      'hostile-build',
      '1.0',
      [
        `read=${secret}`,
        `connect=127.0.0.2:${exfilPort}`,
        'connect=files.pythonhosted.org:443',
        `write=${join(cache, 'uv', 'planted')}`,
        `write=${hostPlant}`,
        'write=/tmp/planted-by-build',
        `write=${join(home, 'planted-by-build')}`,
      ].join('\n'),
    );
    const first = await start(['hostile-build==1.0'], { MCP_SANDBOX_TEST_SECRET: 'nope' });
    expect(first.stderr).toMatch(/pinned hostile-build==1\.0/);
    expect(first.info?.flavor).toBe('sdist');
    const built = first.info?.built ?? {};
    // The build ran (it wrote its report), and no read or connection succeeded. Its writes land
    // in its own sandbox's private /tmp and home at best: the host's files are checked below.
    expect(Object.keys(built).length).toBeGreaterThan(3);
    for (const [attempt, outcome] of Object.entries(built)) {
      if (attempt.startsWith('read:') || attempt.startsWith('connect:')) {
        expect(outcome, attempt).not.toMatch(/^(READ|CONNECTED)/);
      }
    }
    expect(built.home).not.toBe(home);
    expect(built.env).toEqual([]);
    expect(stolen).toBe(0);
    expect(existsSync(join(cache, 'uv', 'planted'))).toBe(false);
    expect(existsSync(hostPlant)).toBe(false);
    expect(existsSync(join(home, 'planted-by-build'))).toBe(false);
    // The next server (a warm start of the same one) sees nothing the build planted.
    // And the server itself runs with none of the install's network: the index is not reachable.
    const indexHost = new URL(indexUrl).host;
    const again = await start(['hostile-build==1.0'], {}, undefined, ['--env', `PROBE=${indexHost}`]);
    expect(again.info?.planted).toEqual([]);
    expect(again.info?.probe.index).toMatch(/Error|refused|denied/i);
    expect(again.stderr).not.toMatch(/resolving|installing/);
  }, 120_000);

  it("removes the install's own uv cache before the environment is sealed, never following what a build script planted in it", async () => {
    // Host paths the build script aims links at (it cannot see them: the links are strings).
    const hostFile = join(root, 'host-file.txt');
    const hostDir = join(root, 'host-dir');
    mkdirSync(hostDir, { recursive: true });
    writeFileSync(hostFile, 'host-owned', { mode: 0o644 });
    writeFileSync(join(hostDir, 'keep.txt'), 'keep');
    const hostBefore = lstatSync(hostFile);
    build(
      'sdist',
      'cache-plant',
      '1.0',
      [`plant=${hostFile}`, `plant=${hostDir}`, 'plant=/etc/passwd'].join('\n'),
    );
    const first = await start(['cache-plant==1.0']);
    expect(first.info?.flavor, first.stderr).toBe('sdist');
    // The plants were made (a hard link to a host file cannot be: not visible, or another mount).
    const built = first.info?.built ?? {};
    for (const target of [hostFile, hostDir, '/etc/passwd']) {
      expect(built[`plant:${target}`], target).toMatch(/^PLANTED symlink,hardlink:\w+,fifo,locked$/);
    }
    // Nothing outside the staging directory was touched.
    expect(readFileSync(hostFile, 'utf8')).toBe('host-owned');
    expect(lstatSync(hostFile).mode).toBe(hostBefore.mode);
    expect(lstatSync(hostFile).nlink).toBe(1);
    expect(readdirSync(hostDir)).toEqual(['keep.txt']);
    // The published environment: the venv and the resolution, no cache, nothing linked to a removed
    // file, nothing writable but by its owner, no FIFO.
    const uvRoot = join(cache, 'mcp-sandbox', 'uv');
    const entry = readdirSync(uvRoot).find((name) => {
      const marker = join(uvRoot, name, 'install.json');
      return (
        existsSync(marker) && JSON.parse(readFileSync(marker, 'utf8')).requirement === 'cache-plant==1.0'
      );
    });
    expect(entry).toBeDefined();
    // The cache was set aside beside the environment and is removed after the start has its answer.
    const setAside = join(uvRoot, entry as string, 'dropped-uv-cache');
    for (let i = 0; i < 100 && existsSync(setAside); i++) await new Promise((done) => setTimeout(done, 100));
    expect(existsSync(setAside)).toBe(false);
    const pkg = join(uvRoot, entry as string, 'pkg');
    expect(readdirSync(pkg).sort()).toEqual(['resolved.txt', 'venv']);
    const odd: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        const stat = lstatSync(path);
        if (!stat.isSymbolicLink() && (stat.mode & 0o022) !== 0) odd.push(`${path}: writable by others`);
        if (stat.isFile() && stat.nlink !== 1) odd.push(`${path}: ${stat.nlink} links`);
        if (stat.isFIFO() || stat.isSocket()) odd.push(`${path}: not a file`);
        if (stat.isDirectory()) walk(path);
      }
    };
    walk(pkg);
    expect(odd).toEqual([]);
    const warm = await start(['cache-plant==1.0']);
    expect(warm.info?.flavor, warm.stderr).toBe('sdist');
    expect(warm.stderr).not.toMatch(/resolving|installing/);
  }, 120_000);

  it('keeps a first install the client abandons going in the background; the next start finds it', async () => {
    build('wheel', 'slow-demo', '1.0', 'slow');
    gateOpen = false;
    const first = spawnBin(['run', '--', 'uvx', 'slow-demo==1.0'], userEnv());
    let said = '';
    try {
      // The install is under way: uv asked the index for the wheel, which waits at the gate.
      await waitFor(() => slowAsked > 0, 60_000, 'the install to ask for the wheel');
      said = first.stderrSoFar();
      // The client gives up: the bridge is killed outright, and only then does the index answer.
      first.child.kill('SIGKILL');
      await first.result;
    } finally {
      gateOpen = true;
      first.child.kill('SIGKILL');
    }
    const again = await start(['slow-demo==1.0']);
    expect(again.info?.flavor, again.stderr).toBe('slow');
    // This start installed nothing itself: it waited for the install already under way, or found it done.
    expect(again.stderr).not.toMatch(/resolving slow-demo|installing slow-demo/);
    const warm = await start(['slow-demo==1.0']);
    expect(warm.info?.flavor).toBe('slow');
    expect(warm.stderr).not.toMatch(/resolving|installing|waiting for the install/);
    expect(said).toMatch(/goes on if the client gives up/);
  }, 180_000);

  it('refuses a wheel swapped under the same version, naming the artifact', async () => {
    build('wheel', 'swap-demo', '1.0', 'first');
    const first = await start(['swap-demo==1.0']);
    expect(first.info?.flavor).toBe('first');
    // The cache entry goes (a new machine, a cleaned cache); the index now serves other bytes.
    rmSync(join(cache, 'mcp-sandbox', 'uv'), { recursive: true, force: true });
    build('wheel', 'swap-demo', '1.0', 'second');
    const second = await start(['swap-demo==1.0']);
    expect(second.code).not.toBe(0);
    expect(second.info).toBeUndefined();
    expect(second.stderr).toMatch(/different artifact for swap-demo==1\.0/);
    expect(second.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  it('starts warm: no resolution, no request to the index', async () => {
    build('wheel', 'warm-demo', '2.0', 'warm');
    const first = await start(['--from', 'warm-demo==2.0', 'warm-demo']);
    expect(first.info?.flavor).toBe('warm');
    const before = served.length;
    const second = await start(['--from', 'warm-demo==2.0', 'warm-demo']);
    expect(second.info?.flavor).toBe('warm');
    expect(second.stderr).not.toMatch(/resolving|installing/);
    expect(served.slice(before)).toEqual([]);
  }, 120_000);

  it('says which Python a package needs, and the command that installs it, when the host has none that fits', async () => {
    build('wheel', 'future-demo', '1.0', 'future', '>=3.99');
    const result = await start(['future-demo==1.0']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/needs Python >=3\.99.*uv python install 3\.99/);
    // uv was never let download a Python (from inside the sandbox it would try GitHub).
    expect(result.stderr).not.toMatch(/download|github|python-build-standalone/i);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  it.skipIf(!existsSync(OLDER_PYTHON))(
    `uses a uv-managed Python when the host's is too old for the package (needs ${OLDER_PYTHON} to play the host's)`,
    async () => {
      build('wheel', 'newer-demo', '1.0', 'on-managed', '>=3.11');
      // The user's uv Pythons: a CPython 3.11 laid out as `uv python install` lays it out.
      const managed = join(root, 'uv-pythons');
      const bin = join(managed, 'cpython-3.11.2-linux-x86_64-gnu', 'bin');
      mkdirSync(bin, { recursive: true, mode: 0o755 });
      chmodSync(managed, 0o755);
      copyFileSync('/usr/bin/python3.11', join(bin, 'python3.11'));
      chmodSync(join(bin, 'python3.11'), 0o755);
      symlinkSync('python3.11', join(bin, 'python3'));
      // The uv the suite runs with: the first on PATH (`.ci/run` puts its pinned uv there).
      const uvDir = dirname(
        execFileSync('sh', ['-c', 'command -v uv'], { cwd: '/', encoding: 'utf8' }).trim(),
      );
      const env = { PATH: `${dirname(OLDER_PYTHON)}:${uvDir}:/usr/bin:/bin`, UV_PYTHON_INSTALL_DIR: managed };
      const first = await start(['newer-demo==1.0'], env);
      expect(first.info?.flavor, first.stderr).toBe('on-managed');
      expect(first.stderr).toMatch(/needs Python >=3\.11: using uv's Python 3\.11\.2/);
      const warm = await start(['newer-demo==1.0'], env);
      expect(warm.info?.flavor, warm.stderr).toBe('on-managed');
      expect(warm.stderr).not.toMatch(/resolving|installing|needs Python/);
    },
    120_000,
  );

  it('runs no module of the working folder on the host while it looks for uv and Python', async () => {
    // The working folder may be a server's rw mount: a `uv.py` there must not run when the host
    // asks its Python where uv is (a version manager's shim on PATH is not uv itself).
    const folder = mkdtempSync(join(root, 'project-'));
    const ran = join(root, `host-ran-${randomBytes(4).toString('hex')}`);
    for (const name of ['uv.py', 'sys.py', 'sitecustomize.py']) {
      writeFileSync(join(folder, name), `open(${JSON.stringify(ran)}, "a").write("${name}\\n")\n`);
    }
    const shims = mkdtempSync(join(root, 'shims-'));
    writeFileSync(join(shims, 'uv'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    // Debian's python3 (the one .ci/run checks for), with no uv beside it.
    await start(['swap-demo==1.0'], { PATH: `${shims}:/usr/bin:/bin` }, folder);
    expect(existsSync(ran) ? readFileSync(ran, 'utf8') : '').toBe('');
  }, 60_000);

  it('an index that redirects elsewhere gets the install nowhere: only the index is reachable', async () => {
    const before = stolen;
    const result = await start(['redirect-demo==1.0']);
    expect(result.code).not.toBe(0);
    expect(result.info).toBeUndefined();
    expect(stolen).toBe(before);
    expect(result.stderr).toMatch(/resolving redirect-demo==1\.0 failed/);
    // uv's cause first (the refused redirect is a 403 from the proxy), and the host it was sent to
    // as a grant to consider; never the index, which the install reaches already.
    expect(result.stderr).toMatch(/resolving redirect-demo==1\.0 failed: the index \S+ answered HTTP 403/);
    expect(result.stderr).toContain(`--install-allow-net 127.0.0.2:${exfilPort}`);
    expect(result.stderr).not.toContain(`--install-allow-net ${new URL(indexUrl).host}`);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  it("takes the index from the user's uv.toml, never from a project's uv.toml or pyproject.toml", async () => {
    build('wheel', 'cfg-demo', '1.0', 'from-user-config');
    const config = join(root, 'config');
    mkdirSync(join(config, 'uv'), { recursive: true });
    writeFileSync(join(config, 'uv', 'uv.toml'), `[[index]]\nurl = "${indexUrl}"\ndefault = true\n`);
    // The working folder (a cloned repository, or a server's rw mount) names another index.
    const project = mkdtempSync(join(root, 'project-'));
    const evil = `http://127.0.0.2:${exfilPort}/simple`;
    writeFileSync(
      join(project, 'uv.toml'),
      `index-url = "${evil}"\n[[index]]\nurl = "${evil}"\ndefault = true\n`,
    );
    writeFileSync(
      join(project, 'pyproject.toml'),
      `[project]\nname = "p"\nversion = "0"\n[[tool.uv.index]]\nurl = "${evil}"\ndefault = true\n`,
    );
    const before = stolen;
    const result = await start(['cfg-demo==1.0'], { UV_DEFAULT_INDEX: '', XDG_CONFIG_HOME: config }, project);
    expect(result.info?.flavor, result.stderr).toBe('from-user-config');
    expect(result.stderr).toContain(`installing cfg-demo==1.0 from ${indexUrl}`);
    expect(stolen).toBe(before);
    // A user config that lists a second index is refused with what to set, not half-honoured.
    writeFileSync(join(config, 'uv', 'uv.toml'), `extra-index-url = ["${evil}"]\n`);
    const refused = await start(['cfg-demo==2.0'], { UV_DEFAULT_INDEX: '', XDG_CONFIG_HOME: config });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/extra-index-url: uvx servers install from one index.*UV_DEFAULT_INDEX/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  it("says uv's own cause first: a version the index does not have", async () => {
    const result = await start(['cfg-demo==9.9']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /mcp-sandbox: error: resolving cfg-demo==9\.9 failed: no set of versions satisfies it: Because [^\n]*cfg-demo/,
    );
    expect(result.stderr).not.toMatch(/--install-allow-net|\n\s+at /);
  }, 60_000);

  it('refuses a uvx option it does not understand, with a message', async () => {
    const result = await start(['--with', 'requests', 'swap-demo==1.0']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/uvx option "--with" is not supported/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});
