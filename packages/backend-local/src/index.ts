export { type EarlyLocalRun, EarlyLocalStart } from './early.js';
export {
  createLocalBackend,
  createLocalBackend as createBackend,
  DEFAULT_MAX_PROCESSES,
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
