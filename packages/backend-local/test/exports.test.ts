import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';

describe('public exports', () => {
  it('are exactly these', () => {
    expect(Object.keys(api).sort()).toEqual([
      'DEFAULT_MAX_PROCESSES',
      'EarlyLocalStart',
      'MIN_BWRAP_VERSION',
      'NONE_BASELINE_ENV',
      'SANDBOX_PROXY_PORT',
      'createBackend',
      'createLocalBackend',
      'createNoneBackend',
      'evaluateLocalProbe',
      'probeLocalSandbox',
    ]);
  });

  it('createBackend is the local backend, constructed without I/O', () => {
    const backend = api.createBackend({ settings: {} });
    expect(backend.id).toBe('local');
    expect(backend.isolation).toBe('os');
    expect(backend.specificationVersion).toBe('sandbox-backend-v1');
  });
});
