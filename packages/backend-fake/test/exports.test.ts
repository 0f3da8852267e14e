import { expect, it } from 'vitest';
import * as api from '../src/index.js';

it('pins the public runtime exports', () => {
  expect(Object.keys(api).sort()).toEqual([
    'BUILTIN_PROGRAMS',
    'DEFAULT_HIGH_WATER_MARK',
    'FAKE_MCP_DEFAULT_PROTOCOL_VERSION',
    'FAKE_MCP_MAX_BIG_BYTES',
    'FAKE_MCP_MODERN_PROTOCOL_VERSION',
    'FAKE_MCP_SERVER_NAME',
    'FAKE_MCP_SERVER_USAGE',
    'FAKE_MCP_SERVER_VERSION',
    'FAKE_MCP_TOOLS',
    'conformanceProbe',
    'createBackend',
    'createFakeBackend',
    'fakeMcpServer',
    'fakeMcpServerBinPath',
    'fakeProbe',
    'parseFakeMcpServerArgs',
    'runFakeMcpServer',
    'runStandalone',
  ]);
});
