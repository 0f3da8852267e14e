import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, FIXTURES, spawnBin, textOf, traceRecords } from './cli.js';

// A server that writes next to its own code, through the built binary on srt's bubblewrap path:
// it runs from a writable copy of its package whose siblings link to the read-only install.
const dir = mkdtempSync(join(tmpdir(), 'srt-copy-'));
// Anyone may pass: as root the sandbox runs as nobody, and only the sandbox may keep files out of reach.
chmodSync(dir, 0o755);
const home = join(dir, 'home');
mkdirSync(home);
const CANARY = 'srt-copy-canary-7f31';
writeFileSync(join(home, 'secret.txt'), CANARY);
// A host directory the hostile install links to; the host and the server must leave it as is.
const hostDir = join(dir, 'host-dir');
mkdirSync(hostDir);
writeFileSync(join(hostDir, 'canary.txt'), CANARY);
const stateRoot = join(dir, 'state');
const env = { HOME: home, MCP_SANDBOX_PIN_LOCK: join(dir, 'npx-lock.json') };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A digest of a tree, links read as links, never followed. */
function treeDigest(root: string): string {
  const hash = createHash('sha256');
  const visit = (path: string, rel: string) => {
    const stat = lstatSync(path);
    hash.update(`${rel}\0${stat.mode}\0${stat.mtimeMs}\0`);
    if (stat.isSymbolicLink()) hash.update(readlinkSync(path));
    else if (stat.isDirectory())
      for (const name of readdirSync(path).sort()) visit(join(path, name), `${rel}/${name}`);
    else if (stat.isFile()) hash.update(readFileSync(path));
  };
  visit(root, '');
  return hash.digest('hex');
}

function cacheEntryOf(trace: string): string {
  const record = traceRecords(trace).find((r) => r.type === 'sandbox.prepare' && typeof r.entry === 'string');
  if (!record) throw new Error('no prepare record in the trace');
  return record.entry as string;
}

async function session<T>(
  args: readonly string[],
  body: (call: (name: string, a: object) => Promise<string>) => Promise<T>,
): Promise<T> {
  const { client, stderr } = await connect(['--backend', 'srt', ...args], env);
  try {
    return await body(async (name, a) =>
      textOf(await client.callTool({ name, arguments: a as Record<string, unknown> })),
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${stderr()}`);
  } finally {
    await client.close();
  }
}

describe('run --backend srt -- npx -y @modelcontextprotocol/server-memory', () => {
  const memory = (...extra: string[]) => [
    '--backend-option',
    `stateRoot=${stateRoot}`,
    ...extra,
    '--',
    'npx',
    '-y',
    '@modelcontextprotocol/server-memory@2026.8.31',
  ];

  it('keeps an entity across sessions with --state, forgets it without, and leaves the install unchanged', async () => {
    const trace = join(dir, 'memory.jsonl');
    await session(memory('--state', 'memory', '--trace', trace), async (call) => {
      const made = await call('create_entities', {
        entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }],
      });
      expect(made).toContain('Ada');
      expect(made).not.toMatch(/EROFS|EACCES|EPERM/);
    });
    const written = traceRecords(trace).find((r) => r.type === 'sandbox.writable-package');
    expect(written).toMatchObject({ persistent: true });
    const entry = cacheEntryOf(trace);
    const before = treeDigest(entry);
    // The write went to the copy, not to the install.
    const installed = join(entry, 'pkg', 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist');
    expect(readdirSync(installed)).not.toContain('memory.jsonl');

    await session(memory('--state', 'memory'), async (call) => {
      expect(await call('read_graph', {})).toContain('wrote the first program');
    });
    // Without --state the writes live as long as the session.
    const bare = join(dir, 'bare.jsonl');
    await session(memory('--trace', bare), async (call) => {
      expect(await call('read_graph', {})).not.toContain('Ada');
      expect(
        await call('create_entities', {
          entities: [{ name: 'Bob', entityType: 'person', observations: [] }],
        }),
      ).toContain('Bob');
    });
    expect(traceRecords(bare).find((r) => r.type === 'sandbox.writable-package')).toMatchObject({
      persistent: false,
    });
    await session(memory('--state', 'memory'), async (call) => {
      const graph = await call('read_graph', {});
      expect(graph).toContain('Ada');
      expect(graph).not.toContain('Bob');
    });
    expect(treeDigest(entry)).toBe(before);
  }, 300_000);
});

interface Registry {
  readonly url: string;
  close(): Promise<void>;
}

/** A loopback npm registry (127.0.0.2: reached through the egress proxy) serving the probe package. */
async function startRegistry(config: Record<string, unknown>): Promise<Registry> {
  const work = mkdtempSync(join(dir, 'pack-'));
  cpSync(join(FIXTURES, 'farm-probe'), join(work, 'package'), { recursive: true });
  writeFileSync(join(work, 'package', 'attack.json'), JSON.stringify(config));
  execFileSync('tar', ['-czf', join(work, 'probe.tgz'), '-C', work, 'package']);
  const tarball = readFileSync(join(work, 'probe.tgz'));
  const manifest = JSON.parse(readFileSync(join(work, 'package', 'package.json'), 'utf8')) as object;
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const url = `http://127.0.0.2:${(server.address() as { port: number }).port}/`;
  const packument = {
    name: '@probe/writer',
    'dist-tags': { latest: '1.0.0' },
    versions: {
      '1.0.0': {
        ...manifest,
        hasInstallScript: true,
        dist: {
          tarball: new URL('/@probe/writer/-/writer-1.0.0.tgz', url).href,
          shasum: createHash('sha1').update(tarball).digest('hex'),
          integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
        },
      },
    },
  };
  server.on('request', (request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', url).pathname);
    if (path === '/@probe/writer') {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(packument));
    } else if (path === '/@probe/writer/-/writer-1.0.0.tgz') {
      response.setHeader('content-type', 'application/octet-stream');
      response.end(tarball);
    } else {
      response.statusCode = 404;
      response.end('{}');
    }
  });
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

interface Attempt {
  readonly ok: boolean;
  readonly value?: unknown;
  readonly code?: string;
}
type Probe = Record<string, Attempt> & { dir: string; realDir: string; installModules?: string };

describe('a hostile install tree and the writable copy (srt)', () => {
  let registry: Registry;
  beforeAll(async () => {
    registry = await startRegistry({ hostDir, home });
  });
  afterAll(() => registry.close());

  const args = (trace: string, ...extra: string[]) => [
    '--backend-option',
    `npmRegistry=${registry.url}`,
    '--backend-option',
    `stateRoot=${stateRoot}`,
    '--trace',
    trace,
    ...extra,
    '--',
    'npx',
    '-y',
    '@probe/writer@1.0.0',
  ];
  const probe = (trace: string, ...extra: string[]) =>
    session(
      args(trace, ...extra),
      async (call) => JSON.parse(await call('probe', { value: 'from-session' })) as Probe,
    );

  it('links named like siblings to host paths are never followed by the host, nor usable by the server', async () => {
    const trace = join(dir, 'probe-1.jsonl');
    const first = await probe(trace, '--state', 'probe');
    // Control: the install script ran (it made the siblings), and the server resolves them.
    expect(first.helper).toEqual({ ok: true, value: 'scoped-helper-ok' });
    expect(first.plain).toEqual({ ok: true, value: 'plain-helper-ok' });
    // It writes next to its own code, in the copy.
    expect(first.ownWrite).toMatchObject({ ok: true });
    expect(first.after).toEqual({ ok: true, value: 'from-session' });
    // The planted links lead nowhere the host shows it, for reading or writing.
    for (const key of ['evilRead', 'evilWrite', 'scopedEvilWrite', 'hostlinkWrite', 'homeRead']) {
      expect(first[key], key).toMatchObject({ ok: false });
    }
    expect(JSON.stringify(first)).not.toContain(CANARY);
    // The install itself stays read-only: its package, a sibling, its top.
    for (const key of ['installOwnWrite', 'installSiblingWrite', 'installTopWrite']) {
      expect(first[key], key).toMatchObject({ ok: false });
    }
    const entry = cacheEntryOf(trace);
    expect(first.installModules).toBe(join(entry, 'pkg', 'node_modules'));
    expect(first.realDir).not.toContain(entry);

    // The host read and wrote nothing through the links: the watched places are as they were,
    // and in the kept copy the planted names are still links, not what they point at.
    expect(readdirSync(hostDir)).toEqual(['canary.txt']);
    expect(readdirSync(home).sort()).not.toContain('planted.txt');
    const copies = readdirSync(join(stateRoot, 'probe')).filter((n) => n.startsWith('pkg-'));
    expect(copies).toHaveLength(1);
    const farm = join(stateRoot, 'probe', copies[0] as string, 'node_modules');
    for (const name of ['evil', 'evil-home', '@probe/evil', '@probe/helper', 'plain-helper']) {
      expect(lstatSync(join(farm, name)).isSymbolicLink(), name).toBe(true);
    }
    expect(lstatSync(join(farm, '@probe', 'writer')).isDirectory()).toBe(true);
    expect(lstatSync(join(farm, '@probe', 'writer', 'hostlink')).isSymbolicLink()).toBe(true);
    const before = treeDigest(entry);

    // The next session with the state reuses the copy (what it wrote is there).
    const second = await probe(join(dir, 'probe-2.jsonl'), '--state', 'probe');
    expect(second.before).toEqual({ ok: true, value: 'from-session' });
    // Without a state: a fresh copy of the session's own.
    const bare = await probe(join(dir, 'probe-3.jsonl'));
    expect(bare.before).toMatchObject({ ok: false, code: 'ENOENT' });
    expect(bare.ownWrite).toMatchObject({ ok: true });
    expect(treeDigest(entry)).toBe(before);
    expect(readdirSync(hostDir)).toEqual(['canary.txt']);
  }, 300_000);

  it('a FIFO the server left for its command in the kept copy does not hang the next start', async () => {
    const planted = await session(args(join(dir, 'fifo-1.jsonl'), '--state', 'fifo'), async (call) =>
      JSON.parse(await call('probe', { plantFifo: true })),
    );
    // Control: the FIFO is in place, where the next session's command leads.
    expect(planted).toEqual({ planted: true });
    // The host resolves nothing in the copy: the start fails inside the sandbox, in time, and says so.
    const run = spawnBin(['run', '--backend', 'srt', ...args(join(dir, 'fifo-2.jsonl'), '--state', 'fifo')], {
      PATH: process.env.PATH,
      ...env,
    });
    run.child.stdin.end(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`,
    );
    const timer = setTimeout(() => run.child.kill('SIGKILL'), 45_000);
    const { code, stderr } = await run.result;
    clearTimeout(timer);
    expect(code, stderr).not.toBeNull();
    expect(code).not.toBe(0);
    // The failure is the sandbox's own: it could not run what the copy holds.
    expect(stderr).toMatch(/\[sandbox\].*node_modules\/\.bin\/writer/);
  }, 120_000);
});
