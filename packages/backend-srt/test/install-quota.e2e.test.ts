/**
 * The install cache's quota holds on srt as on `local` (one install step, shared): an install
 * script that floods its cache entry is stopped while it runs, the start fails naming the
 * package, the limit and how to raise it, and nothing of it stays in the cache.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURES, spawnBin } from './cli.js';

const dir = mkdtempSync(join(tmpdir(), 'srt-quota-'));
// As root srt runs the install step as nobody (65534), like local: the cache under here must be reachable.
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Registry {
  readonly url: string;
  /** What the install script posted when it got to its end. */
  readonly beacons: unknown[];
  close(): Promise<void>;
}

/** A loopback npm registry (127.0.0.2: reached through the egress proxy) serving the flood package. */
async function startRegistry(config: Record<string, unknown>): Promise<Registry> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const url = `http://127.0.0.2:${(server.address() as { port: number }).port}/`;
  const work = mkdtempSync(join(dir, 'pack-'));
  cpSync(join(FIXTURES, 'flood-install'), join(work, 'package'), { recursive: true });
  writeFileSync(join(work, 'package', 'attack.json'), JSON.stringify({ ...config, registry: url }));
  execFileSync('tar', ['-czf', join(work, 'flood.tgz'), '-C', work, 'package']);
  const tarball = readFileSync(join(work, 'flood.tgz'));
  const manifest = JSON.parse(readFileSync(join(work, 'package', 'package.json'), 'utf8')) as object;
  const packument = {
    name: 'flood-install',
    'dist-tags': { latest: '1.0.0' },
    versions: {
      '1.0.0': {
        ...manifest,
        hasInstallScript: true,
        dist: {
          tarball: new URL('/flood-install/-/flood-install-1.0.0.tgz', url).href,
          shasum: createHash('sha1').update(tarball).digest('hex'),
          integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
        },
      },
    },
  };
  const beacons: unknown[] = [];
  server.on('request', (request, response) => {
    const path = new URL(request.url ?? '/', url).pathname;
    if (request.method === 'POST' && path === '/beacon') {
      beacons.push(path);
      request.resume();
      response.end('ok');
    } else if (path === '/flood-install') {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(packument));
    } else if (path === '/flood-install/-/flood-install-1.0.0.tgz') {
      response.setHeader('content-type', 'application/octet-stream');
      response.end(tarball);
    } else {
      response.statusCode = 404;
      response.end('{}');
    }
  });
  return { url, beacons, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('run --backend srt -- npx -y <a package whose install floods the cache>', () => {
  // Before: the 200 MiB in 20,000 files were kept whole as the cache entry, and the server ran.
  it('is stopped while it runs, with the limit and how to raise it, and nothing stays in the cache', async () => {
    const registry = await startRegistry({ files: 20_000, fileBytes: 10 * 1024 });
    const cache = join(dir, 'cache');
    try {
      const run = spawnBin(
        [
          'run',
          '--backend',
          'srt',
          '--backend-option',
          `npmRegistry=${registry.url}`,
          '--backend-option',
          `npmCacheDir=${cache}`,
          '--',
          'npx',
          '-y',
          'flood-install@1.0.0',
        ],
        {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/',
          MCP_SANDBOX_PIN_LOCK: join(dir, 'npx-lock.json'),
          MCP_SANDBOX_INSTALL_MAX_FILES: '2000',
          MCP_SANDBOX_INSTALL_MAX_BYTES: '32M',
        },
      );
      // The client waits (stdin open); a start that kept the flood would run the server: end it.
      const kept = setInterval(() => {
        const entries = existsSync(cache) ? readdirSync(cache).filter((n) => /^[0-9a-f]{24}$/.test(n)) : [];
        if (entries.some((name) => existsSync(join(cache, name, 'install.json')))) run.child.kill('SIGKILL');
      }, 500);
      const { code, stderr } = await run.result.finally(() => clearInterval(kept));
      expect(code, stderr).toBe(125);
      expect(stderr).toContain('the install of flood-install@1.0.0 wrote more than 2000 files');
      expect(stderr).toContain('MCP_SANDBOX_INSTALL_MAX_FILES=');
      expect(registry.beacons).toEqual([]);
      expect(readdirSync(cache).filter((name) => /^[0-9a-f]{24}/.test(name))).toEqual([]);
    } finally {
      await registry.close();
    }
  }, 180_000);
});
