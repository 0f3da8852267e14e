export { BUILTIN_PROGRAMS, createBackend, createFakeBackend, type FakeBackendOptions } from './backend.js';
export { DEFAULT_HIGH_WATER_MARK } from './channel.js';
export {
  FAKE_MCP_DEFAULT_PROTOCOL_VERSION,
  FAKE_MCP_MAX_BIG_BYTES,
  FAKE_MCP_MODERN_PROTOCOL_VERSION,
  FAKE_MCP_SERVER_NAME,
  FAKE_MCP_SERVER_USAGE,
  FAKE_MCP_SERVER_VERSION,
  FAKE_MCP_TOOLS,
  type FakeMcpServerFlags,
  fakeMcpServer,
  parseFakeMcpServerArgs,
} from './fake-mcp-server.js';
export { conformanceProbe, fakeProbe } from './probe.js';
export type {
  FakeOutput,
  FakeProgram,
  FakeProgramContext,
  FakePrograms,
  FakeSignal,
} from './program.js';
export {
  fakeMcpServerBinPath,
  runFakeMcpServer,
  runStandalone,
  type StandaloneOptions,
} from './standalone.js';
