#!/usr/bin/env node
// `pnpm bench` (after the build): see bench/run.mjs and docs/performance.md.
await import('../bench/run.mjs');
