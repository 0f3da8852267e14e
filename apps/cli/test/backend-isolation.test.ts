import { describe, expect, it } from 'vitest';
import { builtInBackends } from '../src/backends.js';

// `ls` counts a config entry sandboxed by the isolation its backend declares in the registry: the
// declaration must be what the backend's sessions report.
describe('each built-in backend declares the isolation it gives', () => {
  it.each(Object.entries(builtInBackends))('%s', async (_, entry) => {
    const backend = await entry.create({ hostEnv: { ...process.env, E2B_API_KEY: 'e2b_0000' } });
    expect(entry.isolation).toBe(backend.isolation);
  });
});
