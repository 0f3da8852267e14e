import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ViteUserConfig } from 'vitest/config';

/**
 * Tests never keep `npx -y` pins in the lock of the user who runs them: the test script gives the
 * whole suite one lock, and a package's tests run on their own get one, removed at the end.
 */
function pinLock(): string {
  if (process.env.MCP_SANDBOX_PIN_LOCK) return process.env.MCP_SANDBOX_PIN_LOCK;
  const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-test-pins-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'npx-lock.json');
}

// One test configuration for every package. scripts/test.sh asks for a JSON report next to each
// package, from which it prints the closing "N passed, N failed" line.
export const sharedTestConfig: ViteUserConfig = {
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    env: { MCP_SANDBOX_PIN_LOCK: pinLock() },
    reporters: process.env.MCPSANDBOX_TEST_JSON
      ? ['default', ['json', { outputFile: 'test-results.json' }]]
      : ['default'],
  },
};
