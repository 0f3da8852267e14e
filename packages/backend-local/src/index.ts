export {
  createLocalBackend,
  createLocalBackend as createBackend,
  DEFAULT_MAX_PROCESSES,
  type LocalBackendOptions,
  SANDBOX_PROXY_PORT,
} from './local.js';
export { createNoneBackend, NONE_BASELINE_ENV } from './none.js';
export { DEFAULT_NPM_REGISTRY, type NpxCommand, parseNpxCommand, SANDBOX_NPM_ROOT } from './npx.js';
export {
  evaluateLocalProbe,
  type LocalProbeFacts,
  type LocalSandboxInfo,
  MIN_BWRAP_VERSION,
  type ProbeOptions,
  probeLocalSandbox,
} from './probe.js';
export {
  defaultStateRoot,
  listStates,
  removeState,
  type StateInfo,
  StateInUseError,
} from './state.js';
export { ALWAYS_HIDDEN, SANDBOX_HOME } from './view.js';
