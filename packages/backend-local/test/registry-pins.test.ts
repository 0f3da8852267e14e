/**
 * A pin binds a package identity (name@version) to one tarball, whichever registry serves it
 * (issue 30, finding 4: pins were kept per registry, so a registry named by a sandbox-written
 * `.npmrc` got a fresh pin for its own tarball). Each loopback registry of these tests packs
 * its own tarball of the same name@version: the second is the attacker's.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOSTILE_PACKAGE, runBin, startRegistry } from './cli.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-pins-'));
// As root the sandbox runs as nobody, who must be able to pass through to the cache.
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const config = {
  canary: '/nonexistent/canary',
  markerNames: [],
  secretName: 'UNUSED',
  mountedFile: '/nonexistent',
};

async function startServer(url: string, lock: string, cache: string): Promise<void> {
  const running = await runBin(
    [
      '--backend-option',
      `npmRegistry=${url}`,
      '--backend-option',
      `npmCacheDir=${cache}`,
      '--',
      'npx',
      '-y',
      `${HOSTILE_PACKAGE}@1.0.0`,
    ],
    { MCP_SANDBOX_PIN_LOCK: lock },
  );
  await running.client.close();
}

describe('pins keyed by package identity', () => {
  it('the same name@version from another registry with another tarball is refused, naming both', {
    timeout: 120_000,
  }, async () => {
    const lock = join(work, 'npx-lock.json');
    const cache = (name: string) => {
      const dir = join(work, name);
      mkdirSync(dir, { mode: 0o755 });
      return dir;
    };
    const first = await startRegistry(config);
    const second = await startRegistry({ ...config, other: true });
    try {
      await startServer(first.url, lock, cache('first'));
      const pinned = JSON.parse(readFileSync(lock, 'utf8')) as {
        v: number;
        pins: Array<Record<string, string>>;
      };
      expect(pinned.pins).toEqual([expect.objectContaining({ name: HOSTILE_PACKAGE, registry: first.url })]);
      const integrity = pinned.pins[0]?.integrity ?? '';
      // Before: a fresh pin for the second registry, and its tarball installed and started.
      const refused = await startServer(second.url, lock, cache('second')).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(refused, 'the second registry should have been refused').toBeInstanceOf(Error);
      expect(refused?.message).toContain(`(not ${first.url}, where it was pinned)`);
      expect(refused?.message).toContain(`pinned ${integrity}`);
      expect(refused?.message).toMatch(/different tarball for hostile-install@1\.0\.0: sha512-/);
      expect(second.tarballs()).toBe(0);
      expect(pinned.v).toBe(2);
      // Control: the pinned registry still starts it.
      await startServer(first.url, lock, cache('again'));
    } finally {
      await first.close();
      await second.close();
    }
  });
});
