import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';

describe('public exports', () => {
  it('are exactly these', () => {
    expect(Object.keys(api).sort()).toEqual([
      'ALWAYS_HIDDEN',
      'DEFAULT_MAX_PROCESSES',
      'DEFAULT_NPM_REGISTRY',
      'DenialReporter',
      'EgressProxy',
      'MIN_BWRAP_VERSION',
      'NONE_BASELINE_ENV',
      'SANDBOX_HOME',
      'SANDBOX_NPM_ROOT',
      'SANDBOX_PROXY_PORT',
      'StateInUseError',
      'checkMountsSpareHostState',
      'checkStateName',
      'commandBinds',
      'createBackend',
      'createLocalBackend',
      'createNoneBackend',
      'defaultNpmCache',
      'defaultStateRoot',
      'endNamespace',
      'evaluateLocalProbe',
      'identifyInit',
      'isInside',
      'listStates',
      'locateCommand',
      'openState',
      'ownFiles',
      'parseGrant',
      'parseNpxCommand',
      'planTlsTrust',
      'prepareNpx',
      'probeLocalSandbox',
      'removeState',
    ]);
  });

  it('createBackend is the local backend, constructed without I/O', () => {
    const backend = api.createBackend({ settings: {} });
    expect(backend.id).toBe('local');
    expect(backend.isolation).toBe('os');
    expect(backend.specificationVersion).toBe('sandbox-backend-v1');
  });
});
