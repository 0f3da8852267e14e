/**
 * `--install-env`: a value for the npx install step only (PUPPETEER_SKIP_DOWNLOAD=1 and the
 * like). The install's scripts see it; the server never does; the trace has it redacted.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOSTILE_PACKAGE, runBin, startRegistry } from './cli.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-install-env-'));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('--install-env', () => {
  it('reaches the install scripts, never the server, and is redacted in the trace', {
    timeout: 180_000,
  }, async () => {
    const name = 'MCPSANDBOX_INSTALL_ONLY';
    const value = `install-${randomUUID()}`;
    const registry = await startRegistry({
      canary: join(work, 'no-canary'),
      markerNames: [],
      secretName: name,
      mountedFile: join(work, 'none'),
    });
    const trace = join(work, 'trace.jsonl');
    try {
      const running = await runBin(
        [
          '--install-env',
          `${name}=${value}`,
          '--trace',
          trace,
          '--backend-option',
          `npmRegistry=${registry.url}`,
          '--backend-option',
          `npmCacheDir=${join(work, 'cache')}`,
          '--',
          'npx',
          '-y',
          `${HOSTILE_PACKAGE}@1.0.0`,
        ],
        { XDG_STATE_HOME: join(work, 'state') },
      );
      try {
        // The server does not get it...
        expect(await running.call('env', { name })).toEqual({ value: null });
      } finally {
        await running.client.close();
      }
      // ...the install script did (control: it ran and reported through the registry).
      expect(registry.beacons).toHaveLength(1);
      expect(registry.beacons[0]?.secret).toBe(value);
      expect(readFileSync(trace, 'utf8')).not.toContain(value);
    } finally {
      await registry.close();
    }
  });
});
