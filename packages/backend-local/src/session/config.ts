/**
 * The backend's options, parsed once when it is made, and the configuration of each sandbox,
 * built from them, the probe's result and the sandbox's spec.
 */
import { homedir, tmpdir } from 'node:os';
import { type Logger, type SandboxEvent, type SandboxSpec, silentLogger } from '@mcpsandbox/core';
import { type Dialer, type NetGrant, parseGrant, type Resolver } from '@mcpsandbox/egress';
import {
  type Bind,
  checkMountsSpareHostState,
  checkStateName,
  defaultNpmCache,
  defaultStateRoot,
  hiddenRoots,
  type InstallQuota,
  installQuota,
  type NpxCacheOptions,
  planTlsTrust,
  STATE_PREFIX,
  type TlsTrust,
  tlsTrustNames,
  unwritableMountWarnings,
  uvCacheRoot,
} from '@mcpsandbox/host-side';
import { type LimitPlan, planLimits } from '../limits.js';
import type { LocalBackendOptions } from '../options.js';
import type { LocalHostInfo } from '../probe.js';
import {
  checkMounts,
  DEFAULT_MAX_PROCESSES,
  DEFAULT_SHM_SIZE,
  DEFAULT_TMP_SIZE,
  numberSetting,
  parseGrants,
  parseInstallEnv,
  sizeSetting,
} from '../settings.js';
import type { MachineCheck } from './probe-once.js';
import { readHardLimits } from './process-helpers.js';

/** What `createLocalBackend` parses from its options before any sandbox exists. */
export interface BackendSettings {
  readonly logger: Logger;
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  readonly settings: Readonly<Record<string, string>>;
  readonly stateName: string | undefined;
  readonly autoMount: boolean;
  readonly installHosts: string[];
  readonly installEnv: Record<string, string>;
  /** The install cache's quota (environment, parsed here so that a malformed value fails at once). */
  readonly installQuota: InstallQuota;
  readonly tmpSize: number;
  readonly shmSize: number;
  readonly tlsTrust: boolean;
  readonly trustNote: string;
}

export function backendSettings(options: LocalBackendOptions): BackendSettings {
  const logger = options.logger ?? silentLogger;
  const hostEnv = options.hostEnv ?? process.env;
  // `--backend-option key=value`: stateDir, npmCacheDir, npmRegistry, npmUserCache, maxProcesses, tmpSize, shmSize,
  // stateRoot; and from run's own flags: state (--state), autoMount (--no-auto-mount).
  const settings = options.settings ?? {};
  const stateName = settings.state === undefined ? undefined : checkStateName(settings.state);
  const autoMount = settings.autoMount !== 'false';
  // `--install-allow-net`: hosts the npx install step may reach besides the registry.
  const installHosts = (settings.installAllowNet ?? '').split(',').filter(Boolean);
  for (const host of installHosts) parseGrant(host);
  const installEnv = options.installEnv ?? parseInstallEnv(settings.installEnv);
  const quota = installQuota(hostEnv);
  const tmpSize = options.tmpSizeBytes ?? sizeSetting(settings, 'tmpSize') ?? DEFAULT_TMP_SIZE;
  const shmSize = options.shmSizeBytes ?? sizeSetting(settings, 'shmSize') ?? DEFAULT_SHM_SIZE;
  const tlsTrust =
    options.hostTlsTrust ?? !['off', 'false', '0', 'no'].includes(settings.hostTlsTrust ?? 'on');
  const trustNames = tlsTrust ? tlsTrustNames(hostEnv) : [];
  const trustNote = trustNames.length > 0 ? `; host TLS trust: ${trustNames.join(', ')}` : '';
  return {
    logger,
    hostEnv,
    settings,
    stateName,
    autoMount,
    installHosts,
    installEnv,
    installQuota: quota,
    tmpSize,
    shmSize,
    tlsTrust,
    trustNote,
  };
}

/** One sandbox's configuration: its spec checked, its limits planned, where its files go. */
export function sandboxConfig(
  spec: SandboxSpec,
  found: LocalHostInfo,
  options: LocalBackendOptions,
  backend: BackendSettings,
): SandboxConfig {
  const { logger, hostEnv, settings, stateName, autoMount, tlsTrust, tmpSize, shmSize } = backend;
  const { installHosts, installEnv, installQuota: quota } = backend;
  const grants = parseGrants(spec.network?.allow);
  checkMounts(spec.mounts ?? []);
  const hardLimits = readHardLimits();
  const limits = planLimits(spec.limits, {
    prlimit: found.prlimitPath !== undefined,
    defaultMaxProcesses:
      options.defaultMaxProcesses ?? numberSetting(settings, 'maxProcesses') ?? DEFAULT_MAX_PROCESSES,
    hardLimits,
  });
  for (const note of limits.notes) logger.warn(note);
  spec.onEvent?.({ type: 'limits', enforced: limits.enforced, notEnforced: limits.notEnforced });
  const home = hostEnv.HOME ?? homedir();
  const trust = tlsTrust ? planTlsTrust(hostEnv, hiddenRoots(home)) : undefined;
  for (const note of trust?.notes ?? []) logger.warn(note);
  const stateDir = options.stateDir ?? settings.stateDir ?? tmpdir();
  const stateRoot = settings.stateRoot ?? defaultStateRoot(hostEnv, home, found.runAs !== undefined);
  // The fetch half of an install may use the user's own npm cache (`npmUserCache=off`: never).
  const userCache =
    settings.npmUserCache === 'off'
      ? undefined
      : {
          stateDir,
          statePrefix: STATE_PREFIX,
          stateRoot,
          hidden: [home, ...hiddenRoots(home)],
          writable: [
            ...(options.sessionWritable ?? []),
            ...(spec.mounts ?? []).filter((m) => m.mode === 'rw').map((m) => m.hostPath),
          ],
        };
  const npm = npmOptions(
    options,
    settings,
    hostEnv,
    defaultNpmCache(hostEnv, home, found.runAs !== undefined && !found.staging),
    { installHosts, installEnv, quota, ...(userCache ? { userCache } : {}) },
  );
  checkMountsSpareHostState(spec.mounts ?? [], { stateDir, cacheRoot: npm.cacheRoot, stateRoot });
  // uvx's environments sit beside npm's entries: a server that may write them runs the next's code.
  checkMountsSpareHostState(spec.mounts ?? [], {
    stateDir,
    cacheRoot: uvCacheRoot(npm.cacheRoot),
    stateRoot,
  });
  if (stateName) spec.onEvent?.({ type: 'state', name: stateName, root: stateRoot });
  for (const warning of unwritableMountWarnings(spec.mounts ?? [], found.runAs)) logger.warn(warning);
  return {
    spec,
    info: found,
    grants,
    limits,
    // One byte past the entry quota, so that a file that reaches it counts as past it; never
    // above the host's own hard limit, which a sandbox cannot raise.
    installFileSize: Math.min(
      backend.installQuota.entry.bytes + 1,
      hardLimits.fsize ?? Number.POSITIVE_INFINITY,
    ),
    hostEnv,
    hostHome: home,
    stateDir,
    ...(stateName ? { state: { root: stateRoot, name: stateName } } : {}),
    autoMount,
    tmpSize,
    shmSize,
    npm,
    logger,
    inlineInstall: options.inlineInstall === true,
    ...(options.pinnedIntegrity ? { pinnedIntegrity: options.pinnedIntegrity } : {}),
    ...(options.pythonIndex ? { pythonIndex: options.pythonIndex } : {}),
    ...(options.deferTidying ? { deferTidying: options.deferTidying } : {}),
    ...(options.runAsWhenRoot ? { runAsWhenRoot: options.runAsWhenRoot } : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
    ...(options.dial ? { dial: options.dial } : {}),
    ...(options.secretUpstreamCa ? { secretUpstreamCa: options.secretUpstreamCa } : {}),
    ...(trust ? { tlsTrust: trust } : {}),
    denialHints: options.denialHints ?? !['off', 'false', '0', 'no'].includes(settings.denialHints ?? 'on'),
  };
}

/** Where and how the npx install step installs: the cache, the registry, the install's own grants and env. */
function npmOptions(
  options: LocalBackendOptions,
  settings: Readonly<Record<string, string>>,
  hostEnv: Readonly<Record<string, string | undefined>>,
  defaultCache: string,
  install: {
    readonly installHosts: string[];
    readonly installEnv: Record<string, string>;
    readonly quota: InstallQuota;
    readonly userCache?: NpxCacheOptions['userCache'];
  },
): NpxCacheOptions {
  const { installHosts, installEnv, quota, userCache } = install;
  const registry = options.npmRegistry ?? settings.npmRegistry;
  return {
    cacheRoot: options.npmCacheDir ?? settings.npmCacheDir ?? defaultCache,
    hostEnv,
    // `--project-npmrc`: a project .npmrc may choose npm's settings (else the user's own only).
    ...(settings.projectNpmrc === 'on' ? { projectNpmrc: true } : {}),
    quota,
    ...(installHosts.length > 0 ? { installHosts } : {}),
    ...(Object.keys(installEnv).length > 0 ? { installEnv } : {}),
    ...(registry ? { registry } : {}),
    ...(userCache ? { userCache } : {}),
    ...(options.npmConfig ? { npmConfig: options.npmConfig } : {}),
  };
}

export interface SandboxConfig {
  readonly spec: SandboxSpec;
  readonly info: LocalHostInfo;
  /** Set by the backend: its sandboxes' first start is the machine's trial (session/probe-once.ts). */
  readonly machine?: MachineCheck;
  readonly grants: readonly NetGrant[];
  readonly limits: LimitPlan;
  /** RLIMIT_FSIZE of install steps: no one file larger than an entry's byte quota. */
  readonly installFileSize: number;
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  readonly hostHome: string;
  readonly stateDir: string;
  /** `--state <name>`: the home and package copies persist there across sessions. */
  readonly state?: { readonly root: string; readonly name: string };
  /** Show the server's own files (see `ownFiles`). */
  readonly autoMount: boolean;
  readonly tmpSize: number;
  readonly shmSize: number;
  readonly npm: NpxCacheOptions;
  readonly logger: Logger;
  readonly resolve?: Resolver;
  readonly dial?: Dialer;
  readonly secretUpstreamCa?: string;
  readonly tlsTrust?: TlsTrust;
  readonly denialHints: boolean;
  /** The background install worker itself: install here, no pinning (see LocalBackendOptions). */
  readonly inlineInstall: boolean;
  /** The install worker: the integrity its start pinned, which the install must have. */
  readonly pinnedIntegrity?: string;
  /** The install worker: where tidying that can wait goes (see LocalBackendOptions). */
  readonly deferTidying?: (task: () => void) => void;
  /** The install worker: the Python index its start chose. */
  readonly pythonIndex?: string;
  readonly runAsWhenRoot?: { readonly uid: number; readonly gid: number };
}

/** Internal extras for one exec: install steps bind their cache entry read-write. */
export interface SpawnExtras {
  readonly binds?: readonly Bind[];
  /**
   * An install step: none of the spec's environment or mounts, no earlier cache entry, and a
   * home of its own (in memory), so that install scripts see nothing of what the server gets.
   */
  readonly install?: boolean;
  /** A `--setup` step: like an install step, but in the session's own home. */
  readonly setup?: boolean;
  /** Also told of this process's proxy decisions (an install step learns what it was refused). */
  readonly onEvent?: (event: SandboxEvent) => void;
}
