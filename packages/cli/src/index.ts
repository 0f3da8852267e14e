export {
  type BackendEntry,
  type BackendRegistry,
  type BackendScopedFlag,
  resolveBackend,
} from './backends.js';
export { CONFIG_ERROR_EXIT } from './commands/config-context.js';
export { DOCTOR_UNUSABLE_EXIT } from './commands/doctor-action.js';
export type { ListedConfig, ListedServer } from './commands/ls-action.js';
export { addRunOptions, announce, planRun, type RunFlags, type RunPlan } from './commands/run.js';
export { STATE_NOT_FOUND_EXIT } from './commands/state-action.js';
export { type ResolvedLauncher, resolveLauncher } from './commands/wrap-launcher.js';
export {
  CLIENT_IDS,
  CLIENTS,
  type ClientId,
  type ClientSpec,
  type ConfigLocation,
  type ConfigScope,
  type ConfigSection,
  type LocateContext,
  locateConfig,
} from './config/clients.js';
export { ConfigFileError } from './config/files.js';
export { JsonSyntaxError } from './config/jsonc.js';
export type { Launcher, SelfBinary } from './config/launcher.js';
export { type PythonStart, pythonStart } from './config/python-runner.js';
export { parseWrapped, type WrappedCommand } from './config/servers.js';
export {
  backendProbeFrom,
  bubblewrapBackendProbe,
  defaultBackendProbes,
  envKeyBackendProbe,
  MIN_BUBBLEWRAP,
  MIN_NODE,
  standardChecks,
} from './doctor/checks.js';
export { createSystemDoctorHost, type SystemHostOptions } from './doctor/system.js';
export { echoTrial } from './doctor/trial.js';
export type {
  BackendProbe,
  BackendStatus,
  CheckResult,
  CheckStatus,
  DoctorCheck,
  DoctorHost,
  DoctorSetup,
  ExecResult,
  ProgramCandidate,
} from './doctor/types.js';
export type {
  CliIo,
  CliOptions,
  FaultEvent,
  FaultSource,
  InstallCacheView,
  SignalSource,
} from './options.js';
export { parseAllowNet, parseMount, parseSize } from './parse.js';
export { createProgram, runCli } from './program.js';
export { reportError } from './report.js';
export { CRASH_DEADLINE_MS, HostFaultError, SafetyNet } from './safety-net.js';
export type { StateEntry, StateStore } from './state-store.js';
