/**
 * Issue 30, findings 4 and 5 on srt, through the built binary: the install step is the shared
 * host-side one, so a project `.npmrc` (as a server granted the working folder writes it) never
 * picks the registry, and an install whose integrity differs from the pin never starts.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, FIXTURES } from './cli.js';

const dir = mkdtempSync(join(tmpdir(), 'srt-npmrc-'));
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NAME = '@probe/writer';

interface Registry {
  readonly url: string;
  /** Requests of any kind this registry was sent. */
  readonly requests: () => number;
  close(): Promise<void>;
}

function pack(config: Record<string, unknown>): Buffer {
  const work = mkdtempSync(join(dir, 'pack-'));
  cpSync(join(FIXTURES, 'farm-probe'), join(work, 'package'), { recursive: true });
  writeFileSync(join(work, 'package', 'attack.json'), JSON.stringify(config));
  execFileSync('tar', ['-czf', join(work, 'probe.tgz'), '-C', work, 'package']);
  return readFileSync(join(work, 'probe.tgz'));
}

/** A loopback registry; `impostorForNpm`: npm (its user agent) gets another tarball than the host. */
async function startRegistry(label: string, impostorForNpm = false): Promise<Registry> {
  const config = { hostDir: join(dir, 'none'), home: join(dir, 'none') };
  const genuine = pack({ ...config, label });
  const impostor = impostorForNpm ? pack({ ...config, label, impostor: true }) : genuine;
  const manifest = JSON.parse(readFileSync(join(FIXTURES, 'farm-probe', 'package.json'), 'utf8')) as object;
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const url = `http://127.0.0.2:${(server.address() as { port: number }).port}/`;
  let requests = 0;
  const packument = (tarball: Buffer) => ({
    name: NAME,
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
  });
  server.on('request', (request, response) => {
    requests++;
    const served = /^npm\//.test(request.headers['user-agent'] ?? '') ? impostor : genuine;
    const path = decodeURIComponent(new URL(request.url ?? '/', url).pathname);
    if (path === `/${NAME}`) {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(packument(served)));
    } else if (path === '/@probe/writer/-/writer-1.0.0.tgz') {
      response.setHeader('content-type', 'application/octet-stream');
      response.end(served);
    } else {
      response.statusCode = 404;
      response.end('{}');
    }
  });
  return {
    url,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let count = 0;

/** A user whose ~/.npmrc names `registry`, a project folder of theirs, and a pin lock. */
function place(registry: Registry) {
  const base = join(dir, `case-${++count}`);
  const home = join(base, 'home');
  const project = join(base, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project);
  writeFileSync(join(home, '.npmrc'), `registry=${registry.url}\n`);
  const env = { HOME: home, MCP_SANDBOX_PIN_LOCK: join(base, 'npx-lock.json') };
  const args = ['--backend', 'srt', '--backend-option', `npmCacheDir=${join(base, 'installs')}`];
  return { home, project, env, args: [...args, '--', 'npx', '-y', `${NAME}@1.0.0`] };
}

describe('npx -y on srt: where code comes from', () => {
  it("a project .npmrc does not choose the registry: the user's registry serves the install", async () => {
    const user = await startRegistry('user');
    const attacker = await startRegistry('attacker');
    try {
      const at = place(user);
      writeFileSync(join(at.project, '.npmrc'), `registry=${attacker.url}\n`);
      const { client } = await connect(at.args, at.env, { cwd: at.project });
      await client.close();
      // Before: the attacker's registry was asked and its tarball installed.
      expect(attacker.requests()).toBe(0);
      expect(user.requests()).toBeGreaterThan(0);
    } finally {
      await user.close();
      await attacker.close();
    }
  }, 180_000);

  it('an install whose integrity differs from the pin is refused, naming both', async () => {
    const registry = await startRegistry('two-faced', true);
    try {
      const at = place(registry);
      const error = await connect(at.args, at.env, { cwd: at.project }).then(
        async ({ client }) => {
          await client.close();
          return undefined;
        },
        (caught: unknown) => caught as Error,
      );
      // Before: the impostor was installed and started as the pinned package.
      expect(error, 'the start should have been refused').toBeInstanceOf(Error);
      expect(error?.message).toMatch(
        /npm installed @probe\/writer@1\.0\.0 with integrity sha512-\S+, but sha512-\S+ is pinned: refusing to start it/,
      );
    } finally {
      await registry.close();
    }
  }, 180_000);
});
