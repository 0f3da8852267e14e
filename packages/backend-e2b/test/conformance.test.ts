import { runConformanceSuite } from '@mcpsandbox/core/conformance';
import { afterAll, beforeAll } from 'vitest';
import { type FakeE2B, startFakeE2B } from '../src/testing/index.js';
import { fakeBackend } from './helpers.js';

let fake: FakeE2B;
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterAll(async () => {
  await fake.close();
});

// The real `e2b` SDK drives the fake's REST API and envd; the probe runs as a real local process.
runConformanceSuite({ name: 'e2b (real SDK, fake E2B)', createBackend: () => fakeBackend(fake) });
