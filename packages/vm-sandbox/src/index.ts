export { AppCodeError } from './prepare.js';
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
