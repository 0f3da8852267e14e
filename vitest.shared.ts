import type { ViteUserConfig } from 'vitest/config';

// One test configuration for every package. In CI a JSON report is written next to the package
// so that scripts/test.sh can print the closing "N passed, N failed" line.
export const sharedTestConfig: ViteUserConfig = {
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: process.env.CI ? ['default', ['json', { outputFile: 'test-results.json' }]] : ['default'],
  },
};
