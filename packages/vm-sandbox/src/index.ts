export { createBackend, createVmBackend, type VmBackendOptions } from './backend.js';
export { AppCodeError } from './prepare.js';
export { PROBE_APP_SOURCE, VM_PROBE_COMMAND, vmProbe } from './probe-app.js';
export {
  type CrashInfo,
  type CrashReason,
  type ExposedFunction,
  type LogEntry,
  type LogLevel,
  launchMCPApp,
  MCPAppSandbox,
  type MCPAppSandboxEvents,
  type MCPAppSandboxOptions,
  type RunResult,
  type SandboxAppError,
} from './sandbox.js';
export { childArgv, type Isolation, type LaunchedProcess, type Launcher, permissionFlag } from './session.js';
