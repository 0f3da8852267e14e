export { type CopyInLimits, type CopyInResult, copyIn } from './copy-in.js';
export { type FdPathStrategy, fdPathStrategy, useFdPathStrategy } from './fd-paths.js';
export {
  closeDir,
  HostFsError,
  type OpenDir,
  openDirAt,
  openOwnedDir,
  readFileAt,
  removeAt,
  writeFileAt,
} from './host-fs.js';
export { checkMountsSpareHostState, defaultNpmCache, realOrSelf, STATE_PREFIX } from './host-places.js';
export type { InstallJob, InstallResult, StartedWorker, UvxJob } from './install-job.js';
export { unwritableMountWarnings } from './mount-access.js';
export { endNamespace, identifyInit, killInit, type NamespaceInit } from './namespace.js';
export {
  type InstallCacheStatus,
  type InstallInProgress,
  installCacheStatus,
} from './npx/cache-status.js';
export {
  DEFAULT_INSTALL_QUOTA,
  type InstallQuota,
  InstallQuotaError,
  installQuota,
  parseByteSize,
  QUOTA_VARIABLES,
} from './npx/quota.js';
export {
  cacheKey,
  DEFAULT_NPM_REGISTRY,
  type HostNpmConfig,
  type NpxCacheOptions,
  type NpxCommand,
  type PreparedNpx,
  parseNpxCommand,
  prepareNpx,
  registryAccess,
  SANDBOX_NPM_ROOT,
} from './npx.js';
export { type OwnFiles, ownFiles } from './own-files.js';
export { findOnPath } from './path-lookup.js';
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
export {
  planTlsTrust,
  TLS_TRUST_VARIABLES,
  type TlsTrust,
  type TlsTrustEntry,
  tlsTrustNames,
} from './tls-trust.js';
export {
  isUvxCommand,
  type PreparedUvx,
  parseUvxCommand,
  prepareUvx,
  type UvxCommand,
  type UvxDeps,
  uvCacheRoot,
} from './uvx.js';
export {
  ALWAYS_HIDDEN,
  type Bind,
  commandBinds,
  dedupeBinds,
  hiddenRoots,
  isHidden,
  isInside,
  locateCommand,
  SANDBOX_HOME,
} from './view.js';
