import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runToExit, startRegistry } from './cli.js';

const cache = mkdtempSync(join(tmpdir(), 'mcpsandbox-copy-start-'));
afterAll(() => rmSync(cache, { recursive: true, force: true }));

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } },
};

describe("the session's copy of the server's package, made by the server's own start", () => {
  it('a copy that fails ends the start with exit 125 and says so, before the server runs', async () => {
    const registry = await startRegistry({}, 'unreadable-install');
    try {
      const result = await runToExit(
        [
          '--backend-option',
          `npmRegistry=${registry.url}`,
          '--backend-option',
          `npmCacheDir=${cache}`,
          '--',
          'npx',
          '-y',
          'unreadable-install@1.0.0',
        ],
        { input: `${JSON.stringify(INITIALIZE)}\n` },
      );
      // Control: the install ran and the package was served.
      expect(registry.tarballs()).toBeGreaterThan(0);
      expect(result.stderr).toContain("could not make the server's package writable");
      expect(result.code, result.stderr).toBe(125);
      // The server never answered: its start stopped at the copy.
      expect(result.stdout).not.toContain('"serverInfo"');
    } finally {
      await registry.close();
    }
  }, 120_000);
});
