export { startBridge } from './bridge.js';
export {
  type BridgeOptions,
  type BridgeResult,
  type BridgeSession,
  DEFAULT_SHUTDOWN_TIMING,
  type EndReason,
  type ShutdownTiming,
  type StopSignal,
} from './bridge-types.js';
export {
  type AdaptChildOptions,
  adaptChildProcess,
  type ChildSandboxProcess,
  drainOrClose,
  killAll,
} from './child-process.js';
export {
  type BackendFactoryOptions,
  type BackendModule,
  COPY_LIMITS,
  type CreateOptions,
  type ExecOptions,
  type ExitStatus,
  ISOLATION_LEVELS,
  type IsolationLevel,
  isolationRank,
  type KillSignal,
  type MountSpec,
  type NetworkSpec,
  type PrepareOptions,
  type ResourceLimits,
  type Sandbox,
  type SandboxBackend,
  type SandboxEvent,
  type SandboxProcess,
  type SandboxSpec,
  SPECIFICATION_VERSION,
  type SpecificationVersion,
} from './contract.js';
export { DEFAULT_TTL, formatDuration, parseDuration } from './duration.js';
export type { EgressFailedEvent, EgressStats } from './egress-summary.js';
export { type EnvAllowlist, looksSecret, resolveEnvAllowlist } from './env.js';
export {
  AbortedError,
  BackendUnavailableError,
  BackendVersionError,
  isSandboxError,
  ProcessClosedError,
  SandboxError,
  SandboxFailureError,
  SetupFailedError,
  UsageError,
} from './errors.js';
export { ExitCode, exitCodeOf, signalNumber } from './exit-codes.js';
export {
  DEFAULT_MAX_LINE_BYTES,
  type FrameHandler,
  type FramerOptions,
  LineFramer,
  lineContent,
} from './framing.js';
export {
  grantFlagValue,
  type Host,
  type HostName,
  hostText,
  type IpLiteral,
  parseHost,
  parseHostName,
  parseIpLiteral,
} from './host-name.js';
export {
  BridgeErrorCode,
  errorResponseLine,
  inspectMessage,
  type MessageInfo,
  type MessageKind,
  rawTopLevelValue,
} from './jsonrpc.js';
export {
  type KnownSecret,
  knownSecretHosts,
  knownSecretsOf,
  npmPackageName,
  secretFlagFor,
} from './known-secrets.js';
export {
  createStderrLogger,
  DEBUG_ENV,
  type Logger,
  redactLogger,
  type StderrLoggerOptions,
  silentLogger,
} from './logger.js';
export {
  defaultPinLockFile,
  type NpmSelector,
  type NpxPin,
  PinChangedError,
  type PinnedSpec,
  type PinOptions,
  type PinUpdate,
  parseRegistrySpec,
  pinNpxPackage,
  pinNpxSpec,
  RegistryError,
  type RegistryTrust,
  type Resolution,
  readPinLock,
  resolveFromRegistry,
  updatePins,
} from './npx-pin.js';
export type { MountHint } from './path-hints.js';
export { PendingBytes } from './pending-bytes.js';
export {
  PYTHON_HASH,
  PYTHON_NAME,
  PYTHON_VERSION,
  type PythonDist,
  type PythonPin,
  updatePythonPins,
} from './pin-lock.js';
export {
  digestTool,
  filePinStore,
  globToRegExp,
  type PinChange,
  type PinStore,
  type ToolDescription,
  ToolPolicy,
  type ToolPolicyOptions,
  type ToolVerdict,
} from './policy.js';
export { type RegistryAgent, registryAgent } from './registry-agent.js';
export {
  type BoundSecret,
  bindSecret,
  MIN_SECRET_LENGTH,
  makeStandIn,
  parseSecretFlag,
  type SecretBinding,
} from './secret-binding.js';
export type { BoundHostTrouble, SecretStats } from './secret-summary.js';
export {
  createRedactor,
  MIN_ENCODED_REDACTED_BYTES,
  MIN_REDACTED_LENGTH,
  REDACTED,
  type Redactor,
  SecretSet,
} from './secrets.js';
export { ControlEscaper, escapeControls, jsonForTerminal } from './terminal.js';
export type { ListingPage, PageReview, ToolReview } from './tool-review.js';
export {
  type Direction,
  JsonlTrace,
  openTraceFile,
  TRACE_VERSION,
  type TraceFileOptions,
  type TraceSink,
} from './trace.js';
export {
  readTrace,
  type SessionSummary,
  summarizeTrace,
  type ToolStats,
  type TraceReadResult,
  type TraceRecord,
  type TraceSummary,
} from './trace-summary.js';
export { armTtl, MAX_TIMER_MS } from './ttl.js';
