/**
 * The loopback registries of these tests and the pin lock. Each registry packs its tarball anew,
 * so the same name@version is a different tarball at each; a pin is kept by registry address. Two
 * registries started one after the other may get the same port from the kernel: unless each has
 * an address of its own, the second install is refused as a swapped tarball (a failure that came
 * and went with the ports handed out, in whichever test drew a reused one).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
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

describe('loopback registries of the tests', () => {
  it('a registry on the port an earlier one had is a registry of its own to the pin lock', {
    timeout: 120_000,
  }, async () => {
    const lock = join(work, 'npx-lock.json');
    const cache = (name: string) => {
      const dir = join(work, name);
      mkdirSync(dir, { mode: 0o755 });
      return dir;
    };
    const first = await startRegistry(config);
    const port = Number(new URL(first.url).port);
    try {
      await startServer(first.url, lock, cache('first'));
    } finally {
      await first.close();
    }
    const second = await startRegistry(config, HOSTILE_PACKAGE, { port });
    try {
      expect(new URL(second.url).port).toBe(String(port));
      // Refused before each registry had an address of its own: "now serves a different tarball".
      await startServer(second.url, lock, cache('second'));
    } finally {
      await second.close();
    }
  });
});
