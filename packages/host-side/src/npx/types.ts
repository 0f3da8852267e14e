import type {
  Logger,
  NetworkSpec,
  PinnedSpec,
  RegistryTrust,
  SandboxEvent,
  ChildSandboxProcess as SpawnedProcess,
} from '@mcpsandbox/core';
import type { HostNpmConfig, StartedWorker } from '../install-job.js';
import type { CachePlaces } from '../user-npm-cache.js';
import type { Bind } from '../view.js';
import type { InstallQuota } from './quota.js';

/** Where installed packages appear inside the sandbox (under the hidden, empty /run). */
export const SANDBOX_NPM_ROOT = '/run/mcp-sandbox/npm';
/** Where the user's npm cache appears to the fetch step (and to no other step). */
export const SANDBOX_NPM_CACHE = '/run/mcp-sandbox/npm-cache';

export interface NpxCacheOptions {
  /** Host directory of the persistent cache, one entry per registry and package spec. */
  readonly cacheRoot: string;
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  /** Registry URL; default: the host's `npm config get registry`. */
  readonly registry?: string;
  /**
   * `--project-npmrc`: the user lets a project `.npmrc` in the working folder (or above) choose
   * npm's settings, registry included. Absent: only the user's own npm configuration counts.
   */
  readonly projectNpmrc?: boolean;
  /** More hosts the install step may reach (`--install-allow-net`), for packages that download at install. */
  readonly installHosts?: readonly string[];
  /** Where the output of a failed install is kept for the user (default: `logs` next to the cache root). */
  readonly logDir?: string;
  /** `--install-env`: variables the install step (only) gets, never the server. */
  readonly installEnv?: Readonly<Record<string, string>>;
  /**
   * Let the fetch half of an install use the user's own npm cache (see user-npm-cache.ts),
   * kept clear of these places; absent: every install downloads into a private cache.
   */
  readonly userCache?: Omit<CachePlaces, 'ownerUid' | 'installCacheRoot'>;
  /**
   * The host npm's settings as the start that handed this install over read them (it saves
   * the background worker a second `npm config get`); absent: asked of the host's npm. The
   * cache directory in it is validated again before any use, as every time.
   */
  readonly npmConfig?: HostNpmConfig;
  /** How much an entry and the whole cache may hold; absent: from the environment (npx/quota.ts). */
  readonly quota?: InstallQuota;
}

export interface NpxDeps {
  readonly cache: NpxCacheOptions;
  readonly runAs: { readonly uid: number; readonly gid: number } | undefined;
  readonly onEvent: ((event: SandboxEvent) => void) | undefined;
  /** Where mcp-sandbox's own progress lines go (stderr, through the bridge's logger). */
  readonly logger: Logger;
  /**
   * Turns the command's spec into the exact one to install (pinned installs) and the integrity
   * the install must have; absent: as given, unchecked.
   */
  readonly pin?: (spec: string, registry: string, trust: RegistryTrust) => Promise<PinnedSpec>;
  /**
   * Runs an install step in the sandbox with `binds` and only `network` for egress: no other
   * environment, no mounts of the spec, no other cache entry.
   */
  readonly install: (
    argv: readonly string[],
    binds: readonly Bind[],
    network: NetworkSpec,
    env: Readonly<Record<string, string>>,
    onEvent: (event: SandboxEvent) => void,
  ) => Promise<SpawnedProcess>;
  /**
   * Runs the install in a detached process of its own (see install-worker.ts) so that a start
   * the client abandons still completes it; absent: in this process.
   */
  readonly background?: (pinned: PinnedSpec, registry: string, npmConfig: HostNpmConfig) => StartedWorker;
  /**
   * A first install is likely: the background worker's process may start now, to load while the
   * pin asks the registry (the job is handed to it by `background`; the caller ends it unused).
   */
  readonly backgroundAhead?: () => void;
  /**
   * The exact spec the pin lock holds for `spec` from `registry`, read without the network. A
   * guess only: it decides nothing but whether {@link backgroundAhead} is called.
   */
  readonly lockedSpec?: (spec: string, registry: string) => string | undefined;
  /** Runs tidying that can wait until the start has its answer; absent: it is done at once. */
  readonly later?: (task: () => void) => void;
}

export interface PreparedNpx {
  readonly command: readonly string[];
  /** The cache entry, read-only. */
  readonly bind?: Bind;
  /** The server's own package: its cache key and its directory inside the sandbox. */
  readonly package?: { readonly key: string; readonly dir: string };
}
