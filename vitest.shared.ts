import type { ViteUserConfig } from 'vitest/config';

// One test configuration for every package. scripts/test.sh asks for a JSON report next to each
// package, from which it prints the closing "N passed, N failed" line.
export const sharedTestConfig: ViteUserConfig = {
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: process.env.MCPSANDBOX_TEST_JSON
      ? ['default', ['json', { outputFile: 'test-results.json' }]]
      : ['default'],
  },
};
