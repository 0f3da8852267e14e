// --- host side shared with backend-srt (moving to its own package) ---
// The egress decision and proxy, the denial records and hints, the npx install step and its
// pins, named state and the command's own files: the srt backend reuses them as they are.
export { DenialReporter } from './egress.js';
export { type NetGrant, parseGrant } from './grants.js';
export {
  checkMountsSpareHostState,
  createLocalBackend,
  createLocalBackend as createBackend,
  DEFAULT_MAX_PROCESSES,
  defaultNpmCache,
  type LocalBackendOptions,
  SANDBOX_PROXY_PORT,
} from './local.js';
export { endNamespace, identifyInit, type NamespaceInit } from './namespace.js';
export { createNoneBackend, NONE_BASELINE_ENV } from './none.js';
export {
  DEFAULT_NPM_REGISTRY,
  type NpxCacheOptions,
  type NpxCommand,
  parseNpxCommand,
  prepareNpx,
  SANDBOX_NPM_ROOT,
} from './npx.js';
export { ownFiles } from './own-files.js';
export {
  evaluateLocalProbe,
  type LocalProbeFacts,
  type LocalSandboxInfo,
  MIN_BWRAP_VERSION,
  type ProbeOptions,
  probeLocalSandbox,
} from './probe.js';
export { EgressProxy } from './proxy.js';
export {
  checkStateName,
  defaultStateRoot,
  listStates,
  openState,
  removeState,
  type StateDirs,
  type StateInfo,
  StateInUseError,
} from './state.js';
export { planTlsTrust } from './tls-trust.js';
export { ALWAYS_HIDDEN, type Bind, commandBinds, isInside, locateCommand, SANDBOX_HOME } from './view.js';
// --- end host side shared with backend-srt
