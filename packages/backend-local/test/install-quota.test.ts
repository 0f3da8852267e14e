/**
 * The install cache has a quota: an install script that writes without limit into its own
 * package (the cache entry) is stopped while it runs, whoever waits for it, with a message that
 * names the package, the limit and how to raise it; nothing of it stays in the cache.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, runBin, startRegistry } from './cli.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-install-quota-'));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const PACKAGE = 'flood-install@1.0.0';
/** 200 MiB in 20,000 files: what the script would leave in the cache without a quota. */
const FLOOD = { files: 20_000, fileBytes: 10 * 1024 };
/** Far below the flood, far above the package itself (a handful of files). */
const QUOTA = { MCP_SANDBOX_INSTALL_MAX_FILES: '2000', MCP_SANDBOX_INSTALL_MAX_BYTES: '32M' };

function env(name: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/',
    // Each test's registry packs flood-install@1.0.0 anew, and a pin binds name@version to one
    // tarball whichever registry serves it: each test keeps its pins in a lock of its own.
    MCP_SANDBOX_PIN_LOCK: join(work, `${name}-pins.json`),
    // A private state home: it also tells this test's install worker from any other.
    XDG_STATE_HOME: join(work, `${name}-state`),
    ...QUOTA,
  };
}

/** Everything left in the cache root but npm's settings file: complete entries and staging. */
function leftInCache(cache: string): string[] {
  if (!existsSync(cache)) return [];
  return readdirSync(cache).filter((name) => /^[0-9a-f]{24}/.test(name));
}

/** Install workers started by this test (their environment names its state home). */
function workersOf(stateHome: string): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('install-worker.js')) continue;
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`XDG_STATE_HOME=${stateHome}`)) {
        pids.push(Number(pid));
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** Entries complete in the cache root (their marker written). */
function completeEntries(cache: string): string[] {
  return leftInCache(cache).filter((name) => existsSync(join(cache, name, 'install.json')));
}

/**
 * A start whose client waits (stdin open): its exit code and stderr once it ends, or, when the
 * install is kept as a new complete entry instead (the server then runs), its stderr so far.
 */
async function startUntilEnd(
  args: readonly string[],
  vars: Record<string, string>,
  cache: string,
): Promise<{ code: number | null | 'started'; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'run', ...args], {
    stdio: ['pipe', 'ignore', 'pipe'],
    env: vars,
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  let kept = false;
  const before = completeEntries(cache);
  const watch = setInterval(() => {
    kept = completeEntries(cache).some((name) => !before.includes(name));
    if (kept) child.kill('SIGKILL');
  }, 500);
  try {
    const code = await exited;
    return { code: kept ? 'started' : code, stderr };
  } finally {
    clearInterval(watch);
    child.stdin.destroy();
  }
}

async function waitUntil(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('an install script that floods the install cache', () => {
  // Before: the 200 MiB were written to the end, sealed file by file and kept as the entry.
  it('is stopped while it runs: the start fails naming the package, the limit and how to raise it, and nothing stays', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry(FLOOD, 'flood-install');
    const cache = join(work, 'foreground');
    try {
      const args = [
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
      ];
      const { code, stderr } = await startUntilEnd(
        [...args, '--', 'npx', '-y', PACKAGE],
        env('foreground'),
        cache,
      );
      expect(code, stderr).toBe(125);
      expect(stderr).toContain(`the install of ${PACKAGE} wrote more than`);
      expect(stderr).toMatch(/MCP_SANDBOX_INSTALL_MAX_(FILES|BYTES)=/);
      expect(stderr).not.toMatch(/^\s+at /m);
      // Stopped before its end: the script never got to say it was done.
      expect(registry.beacons).toEqual([]);
      expect(leftInCache(cache)).toEqual([]);
    } finally {
      await registry.close();
    }
  });

  // Before: the worker went on alone and kept the whole flood as a complete cache entry.
  it('is stopped in the background worker too, after the client gave up: nothing stays', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry(FLOOD, 'flood-install');
    const cache = join(work, 'background');
    const vars = env('background');
    try {
      const args = [
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
      ];
      const first = spawn(process.execPath, [BIN, 'run', ...args, '--', 'npx', '-y', PACKAGE], {
        stdio: ['pipe', 'ignore', 'pipe'],
        env: vars,
      });
      let stderr = '';
      first.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      // The client gives up once the install runs: the worst case, SIGKILL of the bridge.
      await waitUntil(() => registry.tarballs() > 0, 60_000, 'the tarball download');
      first.kill('SIGKILL');
      await new Promise((resolve) => first.once('close', resolve));
      expect(stderr).toContain(`installing ${PACKAGE}`);

      await waitUntil(
        () => workersOf(vars.XDG_STATE_HOME as string).length === 0,
        120_000,
        'the worker to end',
      );
      expect(registry.beacons).toEqual([]);
      expect(leftInCache(cache)).toEqual([]);
    } finally {
      await registry.close();
    }
  });

  // Before: nothing bounded the cache as a whole; each entry could be as large as it liked.
  it('is stopped at what is left of the cache total: the message names the total and how to make room', {
    timeout: 180_000,
  }, async () => {
    const small = await startRegistry({ waitMs: 0 }, 'slow-install');
    const flood = await startRegistry({ files: 100, fileBytes: 16 }, 'flood-install');
    const cache = join(work, 'total');
    // Room for the small package (a dozen entries) and not for a hundred files more.
    const vars = { ...env('total'), MCP_SANDBOX_INSTALL_CACHE_MAX_FILES: '60' };
    try {
      const first = await runBin(
        [
          '--backend-option',
          `npmRegistry=${small.url}`,
          '--backend-option',
          `npmCacheDir=${cache}`,
          '--',
          'npx',
          '-y',
          'slow-install@1.0.0',
        ],
        vars,
      );
      await first.client.close();
      expect(completeEntries(cache)).toHaveLength(1);
      const args = [
        '--backend-option',
        `npmRegistry=${flood.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
      ];
      const { code, stderr } = await startUntilEnd([...args, '--', 'npx', '-y', PACKAGE], vars, cache);
      expect(code, stderr).toBe(125);
      expect(stderr).toContain(
        `the install of ${PACKAGE} was stopped: it would take the install cache (${cache}) past its total limit of 60 files`,
      );
      expect(stderr).toContain('MCP_SANDBOX_INSTALL_CACHE_MAX_FILES=');
      // The entry that fitted is still there; nothing of the refused one is.
      expect(leftInCache(cache)).toEqual(completeEntries(cache));
      expect(completeEntries(cache)).toHaveLength(1);
    } finally {
      await small.close();
      await flood.close();
    }
  });

  // Before: one file of any size could be written between two counts of the host's watch. The
  // file goes to the step's tmp (not counted by the watch): only the file size limit refuses it.
  it('cannot write one file larger than the entry quota at all: the write fails, and an install that copes is kept', {
    timeout: 180_000,
  }, async () => {
    const registry = await startRegistry({ bigFileBytes: 64 * 2 ** 20 }, 'flood-install');
    const cache = join(work, 'big-file');
    try {
      const running = await runBin(
        [
          '--backend-option',
          `npmRegistry=${registry.url}`,
          '--backend-option',
          `npmCacheDir=${cache}`,
          '--',
          'npx',
          '-y',
          PACKAGE,
        ],
        env('big-file'),
      );
      await running.client.close();
      expect(registry.beacons).toEqual([{ big: 'EFBIG', flooded: 0 }]);
      expect(completeEntries(cache)).toHaveLength(1);
    } finally {
      await registry.close();
    }
  });
});
