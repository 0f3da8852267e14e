import { expect, it } from 'vitest';
import * as api from '../src/index.js';

it('pins the public runtime exports', () => {
  expect(Object.keys(api).sort()).toEqual([
    'AppCodeError',
    'MCPAppSandbox',
    'PROBE_APP_SOURCE',
    'VM_PROBE_COMMAND',
    'childArgv',
    'createBackend',
    'createVmBackend',
    'launchMCPApp',
    'permissionFlag',
    'vmProbe',
  ]);
  const backend = api.createBackend();
  expect(backend).toMatchObject({
    specificationVersion: 'sandbox-backend-v1',
    id: 'vm',
    isolation: 'language',
  });
  expect(backend.describe?.()).toContain('no OS sandbox around it');
});
