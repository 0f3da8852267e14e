/**
 * The user's own npm cache in an npx install, through the built binary: what it holds is not
 * downloaded again, yet no install script ever sees it (the scripts run in a later step without
 * it), no package code runs while it is mounted, and a package it holds that the registry does
 * not serve to anyone (a private one) is not installed.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { type Registry, runBin, startRegistry } from './cli.js';

const PACKAGE = 'fetch-probe';
/** Where the fetch step sees the cache; a script that found it there would have it. */
const INSIDE = '/run/mcp-sandbox/npm-cache';
/** The uid installs write as: the user, or the sandbox's own uid when running as root. */
const INSTALL_UID = process.getuid?.() === 0 ? 65534 : (process.getuid?.() ?? 0);

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-user-cache-'));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

let count = 0;

/** A user's npm cache that already holds the package: filled by the user's own npm, directly. */
async function filledCache(registry: Registry): Promise<string> {
  const cache = join(work, `npm-cache-${++count}`);
  const project = join(work, `direct-${count}`);
  mkdirSync(project);
  // Not execFileSync: the registry answers from this process.
  await promisify(execFile)(
    'npm',
    [
      'install',
      `${PACKAGE}@1.0.0`,
      '--prefix',
      project,
      '--cache',
      cache,
      '--registry',
      registry.url,
      '--ignore-scripts',
    ],
    { env: { PATH: process.env.PATH ?? '', HOME: work } },
  );
  if (INSTALL_UID !== process.getuid?.())
    execFileSync('chown', ['-R', `${INSTALL_UID}:${INSTALL_UID}`, cache]);
  chmodSync(cache, 0o755);
  return cache;
}

async function start(registry: Registry, npmCache: string) {
  const running = await runBin(
    [
      '--backend-option',
      `npmRegistry=${registry.url}`,
      '--backend-option',
      `npmCacheDir=${join(work, `installs-${++count}`)}`,
      '--',
      'npx',
      '-y',
      `${PACKAGE}@1.0.0`,
    ],
    { XDG_STATE_HOME: join(work, `state-${count}`), npm_config_cache: npmCache },
  );
  await running.client.listTools();
  await running.client.close();
  return running;
}

type Probe = Record<string, { list: unknown; wrote: unknown }>;

describe("the user's npm cache in an npx install", () => {
  it('a package the cache holds is installed with no tarball download; scripts never see the cache', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry({ probePaths: ['.', INSIDE] }, PACKAGE);
    try {
      const cache = await filledCache(registry);
      const tarballs = registry.tarballs();
      const packuments = registry.packuments();
      expect(tarballs).toBe(1);
      const running = await start(registry, cache);
      expect(running.stderr()).not.toContain('private cache');
      // Nothing downloaded again, but the package's document was asked for (revalidated).
      expect(registry.tarballs()).toBe(tarballs);
      expect(registry.packuments()).toBeGreaterThan(packuments);
      // Every script ran, in the scripts step (npm rebuild), none in the fetch (npm install/ci).
      const beacons = registry.beacons as Array<{ event: string; command: string; probes: Probe }>;
      expect(beacons.map((b) => b.event).sort()).toEqual(['install', 'postinstall', 'preinstall']);
      for (const beacon of beacons) {
        expect(beacon.command).toBe('rebuild');
        // Control: the script can write where it may (its own package directory)...
        expect(beacon.probes['.']?.wrote).toBe(true);
        // ...but the cache is not there for it.
        expect(beacon.probes[INSIDE]).toEqual({ list: 'ERR ENOENT', wrote: 'ERR ENOENT' });
      }
      expect(existsSync(join(cache, 'from-install-script'))).toBe(false);
    } finally {
      await registry.close();
    }
  });

  it('the host path of the cache is not reachable from the scripts either', {
    timeout: 180_000,
  }, async () => {
    const cacheDir = join(work, 'npm-cache-by-path');
    const registry = await startRegistry({ probePaths: ['.', cacheDir] }, PACKAGE);
    try {
      const filled = await filledCache(registry);
      execFileSync('mv', [filled, cacheDir]);
      registry.beacons.length = 0;
      await start(registry, cacheDir);
      const beacons = registry.beacons as Array<{ command: string; probes: Probe }>;
      expect(beacons).toHaveLength(3);
      for (const beacon of beacons) {
        expect(beacon.probes['.']?.wrote).toBe(true);
        expect(beacon.probes[cacheDir]).toEqual({ list: 'ERR ENOENT', wrote: 'ERR ENOENT' });
      }
      expect(existsSync(join(cacheDir, 'from-install-script'))).toBe(false);
    } finally {
      await registry.close();
    }
  });

  it('a package the cache holds but the registry no longer serves (private) is not installed', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry({ probePaths: [] }, PACKAGE);
    try {
      const cache = await filledCache(registry);
      registry.beacons.length = 0;
      const tarballs = registry.tarballs();
      registry.hide();
      const failed = await start(registry, cache).then(
        () => 'started',
        (error: Error) => error.message,
      );
      expect(failed).not.toBe('started');
      expect(failed).toContain('404');
      // It asked the registry (control), which refused; nothing of the package ran.
      expect(registry.packuments()).toBeGreaterThan(0);
      expect(registry.tarballs()).toBe(tarballs);
      expect(registry.beacons).toHaveLength(0);
    } finally {
      await registry.close();
    }
  });

  it('a symlinked cache path is not mounted: the install says so and uses a private cache', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry({ probePaths: [] }, PACKAGE);
    try {
      const cache = await filledCache(registry);
      const link = join(work, 'npm-cache-link');
      symlinkSync(cache, link);
      const tarballs = registry.tarballs();
      const running = await start(registry, link);
      expect(running.stderr()).toContain('is a symlink');
      expect(running.stderr()).toContain('private cache');
      // The private cache is empty: the tarball was downloaded (control of the first test).
      expect(registry.tarballs()).toBe(tarballs + 1);
      expect(registry.beacons.every((b) => b.command === 'rebuild')).toBe(true);
    } finally {
      await registry.close();
    }
  });
});
