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

// --- host side shared with backend-srt (moving to its own package) ---
// The egress decision and proxy, the denial records and hints, the npx install step and its
// pins, named state and the command's own files: the srt backend reuses them as they are.
export { DenialReporter } from './egress.js';
export { type NetGrant, parseGrant } from './grants.js';
export { endNamespace, identifyInit, type NamespaceInit } from './namespace.js';
export { type NpxCacheOptions, prepareNpx } from './npx.js';
export { ownFiles } from './own-files.js';
export { EgressProxy } from './proxy.js';
export { checkStateName, openState, type StateDirs } from './state.js';
export { planTlsTrust } from './tls-trust.js';
export { type Bind, commandBinds, isInside, locateCommand } from './view.js';
export { checkMountsSpareHostState, defaultNpmCache } from './local.js';
// --- end host side shared with backend-srt
