// --- host side shared with backend-srt (moving to its own package) ---
// The egress decision and proxy, the denial records and hints, the npx install step and its
// pins, named state and the command's own files: the srt backend reuses them as they are.
export { DenialReporter, EgressProxy, type NetGrant, parseGrant } from '@mcpsandbox/egress';
export {
  ALWAYS_HIDDEN,
  type Bind,
  checkStateName,
  commandBinds,
  DEFAULT_NPM_REGISTRY,
  defaultStateRoot,
  endNamespace,
  identifyInit,
  isInside,
  listStates,
  locateCommand,
  type NamespaceInit,
  type NpxCacheOptions,
  type NpxCommand,
  openState,
  ownFiles,
  parseNpxCommand,
  planTlsTrust,
  prepareNpx,
  removeState,
  SANDBOX_HOME,
  SANDBOX_NPM_ROOT,
  type StateDirs,
  type StateInfo,
  StateInUseError,
} from '@mcpsandbox/host-side';
export {
  checkMountsSpareHostState,
  createLocalBackend,
  createLocalBackend as createBackend,
  DEFAULT_MAX_PROCESSES,
  defaultNpmCache,
  type LocalBackendOptions,
  SANDBOX_PROXY_PORT,
} from './local.js';
export { createNoneBackend, NONE_BASELINE_ENV } from './none.js';
export {
  evaluateLocalProbe,
  type LocalProbeFacts,
  type LocalSandboxInfo,
  MIN_BWRAP_VERSION,
  type ProbeOptions,
  probeLocalSandbox,
} from './probe.js';
// --- end host side shared with backend-srt
