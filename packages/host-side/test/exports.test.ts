import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';
import * as promises from '../src/promises/index.js';

describe('public exports', () => {
  it('are exactly these', () => {
    expect(Object.keys(api).sort()).toEqual([
      'ALWAYS_HIDDEN',
      'DEFAULT_INSTALL_QUOTA',
      'DEFAULT_NPM_REGISTRY',
      'HostFsError',
      'InstallQuotaError',
      'QUOTA_VARIABLES',
      'SANDBOX_HOME',
      'SANDBOX_NPM_ROOT',
      'STATE_PREFIX',
      'StateInUseError',
      'TLS_TRUST_VARIABLES',
      'cacheKey',
      'checkMountsSpareHostState',
      'checkStateName',
      'closeDir',
      'commandBinds',
      'copyIn',
      'dedupeBinds',
      'defaultNpmCache',
      'defaultStateRoot',
      'endNamespace',
      'fdPathStrategy',
      'findOnPath',
      'hiddenRoots',
      'identifyInit',
      'installCacheStatus',
      'installQuota',
      'isHidden',
      'isInside',
      'isUvxCommand',
      'killInit',
      'listStates',
      'locateCommand',
      'openDirAt',
      'openOwnedDir',
      'openState',
      'ownFiles',
      'parseByteSize',
      'parseNpxCommand',
      'parseUvxCommand',
      'planTlsTrust',
      'prepareNpx',
      'prepareUvx',
      'readFileAt',
      'realOrSelf',
      'registryAccess',
      'removeAt',
      'removeState',
      'tlsTrustNames',
      'unwritableMountWarnings',
      'useFdPathStrategy',
      'uvCacheRoot',
      'writeFileAt',
    ]);
  });

  it('exports the promise suite from its own entry', () => {
    expect(Object.keys(promises).sort()).toEqual(['runPromiseSuite']);
  });
});
