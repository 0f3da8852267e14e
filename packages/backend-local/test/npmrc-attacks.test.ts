/**
 * What a sandbox wrote never decides where code comes from (issue 30, findings 4 and 5), through
 * the built binary. A server with read-write access to the client's working folder writes a
 * project `.npmrc` there; the next `npx -y` start of another server in that folder must still
 * install from the user's own registry, never use a cache folder the sandbox made, and never run
 * an install whose integrity differs from the pin.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOSTILE_PACKAGE, type Registry, runBin, SHARED_SERVER, startRegistry } from './cli.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-npmrc-'));
// As root the sandbox runs as nobody, who must be able to pass through to the cache and project.
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const config = {
  canary: '/nonexistent/canary',
  markerNames: [],
  secretName: 'UNUSED',
  mountedFile: '/nonexistent',
};

let count = 0;

/** A user whose own npm configuration (~/.npmrc) names `registry`, and a project folder of theirs. */
function userAndProject(registry: Registry): { home: string; project: string; lock: string } {
  const base = join(work, `case-${++count}`);
  const home = join(base, 'home');
  const project = join(base, 'project');
  mkdirSync(home, { recursive: true, mode: 0o755 });
  mkdirSync(project, { mode: 0o755 });
  chmodSync(base, 0o755);
  // Writable by the server the folder is granted to (nobody, as root).
  chmodSync(project, 0o777);
  writeFileSync(join(home, '.npmrc'), `registry=${registry.url}\n`);
  return { home, project, lock: join(base, 'npx-lock.json') };
}

/** Server one: granted the project folder read-write, it writes what it likes there. */
async function plant(
  project: string,
  home: string,
  files: Record<string, string>,
  dirs: string[] = [],
): Promise<void> {
  const server = await runBin(['--mount', `${project}:rw`, '--', 'node', SHARED_SERVER], { HOME: home });
  try {
    for (const dir of dirs) expect(await server.call('mkdir', { path: dir })).toEqual({ ok: true });
    for (const [path, text] of Object.entries(files)) {
      expect(await server.call('write', { path, text })).toEqual({ ok: true });
    }
  } finally {
    await server.client.close();
  }
}

/** Server two: `npx -y` started by the client in the project folder. */
function startNpx(
  env: { home: string; project: string; lock: string },
  extra: readonly string[] = [],
  more: Record<string, string> = {},
) {
  const cacheRoot = join(env.project, '..', `installs-${++count}`);
  mkdirSync(cacheRoot, { mode: 0o755 });
  return runBin(
    ['--backend-option', `npmCacheDir=${cacheRoot}`, ...extra, '--', 'npx', '-y', `${HOSTILE_PACKAGE}@1.0.0`],
    { HOME: env.home, MCP_SANDBOX_PIN_LOCK: env.lock, ...more },
    { cwd: env.project },
  );
}

describe('a project .npmrc a sandbox wrote', () => {
  it("does not choose the registry of a later npx -y start: the user's registry serves it", {
    timeout: 180_000,
  }, async () => {
    const user = await startRegistry(config);
    const attacker = await startRegistry({ ...config, attacker: true });
    try {
      const env = userAndProject(user);
      await plant(env.project, env.home, { [join(env.project, '.npmrc')]: `registry=${attacker.url}\n` });
      const running = await startNpx(env);
      await running.client.close();
      // Before: the attacker's registry was asked for the package and served its tarball.
      expect({ packuments: attacker.packuments(), tarballs: attacker.tarballs() }).toEqual({
        packuments: 0,
        tarballs: 0,
      });
      expect(user.tarballs()).toBeGreaterThan(0);
    } finally {
      await user.close();
      await attacker.close();
    }
  });

  it('does not make a cache folder the sandbox made into the npm cache of an install', {
    timeout: 180_000,
  }, async () => {
    const user = await startRegistry(config);
    try {
      const env = userAndProject(user);
      const cache = join(env.project, 'npm-cache');
      await plant(env.project, env.home, { [join(env.project, '.npmrc')]: `cache=${cache}\n` }, [cache]);
      const running = await startNpx(env);
      await running.client.close();
      // Before: the host bound it as the user's cache; npm wrote its index and tarballs there.
      expect(readdirSync(cache)).toEqual([]);
    } finally {
      await user.close();
    }
  });

  it("is not the user's npm cache even when the user names it, while a sandbox may write there", {
    timeout: 180_000,
  }, async () => {
    const user = await startRegistry(config);
    try {
      const env = userAndProject(user);
      const cache = join(env.project, 'npm-cache');
      await plant(env.project, env.home, {}, [cache]);
      // The user's own setting names it, but this session mounts the folder read-write.
      const running = await startNpx(env, ['--mount', `${env.project}:rw`], { npm_config_cache: cache });
      await running.client.close();
      expect(readdirSync(cache)).toEqual([]);
    } finally {
      await user.close();
    }
  });
});

describe('--project-npmrc', () => {
  it("lets the project's .npmrc choose the registry, and says so at start with the file", {
    timeout: 180_000,
  }, async () => {
    const user = await startRegistry(config);
    const project = await startRegistry({ ...config, project: true });
    try {
      const env = userAndProject(user);
      const npmrc = join(env.project, '.npmrc');
      writeFileSync(npmrc, `registry=${project.url}\n`);
      const running = await startNpx(env, ['--project-npmrc']);
      await running.client.close();
      expect(running.stderr()).toContain(`--project-npmrc: npm registry ${project.url} (from ${npmrc})`);
      expect(project.tarballs()).toBeGreaterThan(0);
      expect(user.packuments()).toBe(0);
    } finally {
      await user.close();
      await project.close();
    }
  });
});

describe('a pin binds what runs', () => {
  it('an install whose integrity differs from the pin is refused before the server starts', {
    timeout: 180_000,
  }, async () => {
    // The host is told one tarball, npm is served another: what a poisoned cache does.
    const registry = await startRegistry(config, HOSTILE_PACKAGE, { impostorForNpm: true });
    try {
      const env = userAndProject(registry);
      const started = startNpx(env);
      const error = await started.then(
        async (running) => {
          await running.client.close();
          return undefined;
        },
        (caught: unknown) => caught as Error,
      );
      expect(registry.npmRequests()).toBeGreaterThan(0);
      // Before: the impostor was installed and started as the pinned package.
      expect(error, 'the start should have been refused').toBeInstanceOf(Error);
      expect(error?.message).toMatch(
        /npm installed hostile-install@1\.0\.0 with integrity sha512-\S+, but sha512-\S+ is pinned: refusing to start it/,
      );
      // Refused before the impostor's install script ran (it reports to the registry when it does).
      expect(registry.beacons).toEqual([]);
    } finally {
      await registry.close();
    }
  });
});
