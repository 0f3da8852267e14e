/**
 * A first start the client abandons keeps its progress: the install goes on in a detached,
 * bounded process that runs nothing of the server, and the next start is warm. Two starts of
 * the same package at once do not corrupt each other.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@mcpsandbox/core';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, runBin, startRegistry } from './cli.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-background-install-'));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const PACKAGE = 'slow-install@1.0.0';
/** A private state home: the pins of these tests are theirs, not the user's. */
const stateHome = (name: string) => ({ XDG_STATE_HOME: join(work, `${name}-state`) });

function completeEntries(cache: string): string[] {
  if (!existsSync(cache)) return [];
  return readdirSync(cache).filter(
    (name) => /^[0-9a-f]{24}$/.test(name) && existsSync(join(cache, name, 'install.json')),
  );
}

async function waitUntil(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Install workers still running for this cache (their command line names the worker). */
/**
 * Install workers of this test's starts (their environment names its state home): other test
 * files of the package run at the same time, and their workers are not this test's.
 */
function installWorkers(home: { readonly XDG_STATE_HOME: string }): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('install-worker.js')) continue;
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (environ.includes(`XDG_STATE_HOME=${home.XDG_STATE_HOME}`)) pids.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

describe('a first start the client abandons', () => {
  it('completes the install in the background: the next start is warm and downloads nothing', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry({ waitMs: 5000 }, 'slow-install');
    const cache = join(work, 'abandoned');
    const ENV = stateHome('abandoned');
    const args = [
      '--backend-option',
      `npmRegistry=${registry.url}`,
      '--backend-option',
      `npmCacheDir=${cache}`,
    ];
    try {
      const first = spawn(process.execPath, [BIN, 'run', ...args, '--', 'npx', '-y', PACKAGE], {
        stdio: ['pipe', 'ignore', 'pipe'],
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...ENV },
      });
      let stderr = '';
      first.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      // The client gives up while the install runs: the worst case, SIGKILL of the bridge.
      await waitUntil(() => registry.tarballs() > 0, 60_000, 'the tarball download');
      first.kill('SIGKILL');
      await new Promise((resolve) => first.once('close', resolve));
      expect(stderr).toContain('installing slow-install@1.0.0');
      expect(completeEntries(cache)).toEqual([]);

      // The install completes without anyone waiting for it, and its worker is gone after.
      await waitUntil(() => completeEntries(cache).length === 1, 120_000, 'the background install');
      await waitUntil(() => installWorkers(ENV).length === 0, 30_000, 'the install worker to exit');

      const second = await runBin(args.concat(['--', 'npx', '-y', PACKAGE]), ENV);
      try {
        // The postinstall ran to its end: the server finds what it built.
        expect(second.client.getServerVersion()?.name).toBe('slow-install');
      } finally {
        await second.client.close();
      }
      expect(second.stderr()).not.toContain('installing slow-install');
      expect(registry.tarballs()).toBe(1);
    } finally {
      await registry.close();
    }
  });

  it('two starts at once do not corrupt each other: both connect, one complete entry, no staging left', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry({ waitMs: 2000 }, 'slow-install');
    const cache = join(work, 'concurrent');
    const ENV = stateHome('concurrent');
    const args = [
      '--backend-option',
      `npmRegistry=${registry.url}`,
      '--backend-option',
      `npmCacheDir=${cache}`,
    ];
    try {
      const [a, b] = await Promise.all([
        runBin(args.concat(['--', 'npx', '-y', PACKAGE]), ENV),
        runBin(args.concat(['--', 'npx', '-y', PACKAGE]), ENV),
      ]);
      try {
        expect(a.client.getServerVersion()?.name).toBe('slow-install');
        expect(b.client.getServerVersion()?.name).toBe('slow-install');
      } finally {
        await a.client.close();
        await b.client.close();
      }
      // Each start installs or waits for the other's (when its staging directory is already there).
      expect(registry.tarballs()).toBeLessThanOrEqual(2);
      expect(completeEntries(cache)).toHaveLength(1);
      expect(readdirSync(cache).filter((name) => name.includes('.tmp-'))).toEqual([]);
    } finally {
      await registry.close();
    }
  });
});

/**
 * A first start's worker is started ahead of its job, while the pin asks the registry. In a host
 * that goes on running (`serve`, a library), a start whose pin fails must not leave that worker
 * waiting for a job that never comes: the registry could fail pins on purpose, one idle process
 * per start. The built backend is used here: only it has the worker beside it.
 */
describe('a worker started ahead of its job', () => {
  it('ends unused when the pin fails, while its host goes on running', { timeout: 60_000 }, async () => {
    const registry = await startRegistry({}, 'slow-install');
    registry.hide();
    const ENV = stateHome('ahead-refused');
    const cache = join(work, 'ahead-refused');
    const { createLocalBackend } = await import('../dist/index.js');
    const backend = createLocalBackend({
      hostEnv: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...ENV },
      logger: silentLogger,
      npmCacheDir: cache,
      npmRegistry: registry.url,
    });
    const sandbox = await backend.create({ sessionId: 'ahead', env: {}, ttlMs: 60_000 });
    try {
      const started = sandbox.prepare?.(['npx', '-y', PACKAGE], { stderr: () => {} });
      await expect(started).rejects.toThrow(/slow-install/);
      await waitUntil(() => installWorkers(ENV).length === 0, 10_000, 'the worker started ahead to end');
      expect(registry.tarballs()).toBe(0);
      expect(completeEntries(cache)).toEqual([]);
    } finally {
      await sandbox.close();
      await registry.close();
    }
  });
});
