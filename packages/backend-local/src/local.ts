import type { ChildProcess, StdioOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import {
  armTtl,
  type BackendFactoryOptions,
  COPY_LIMITS,
  defaultPinLockFile,
  type ExecOptions,
  type KillSignal,
  killAll,
  type Logger,
  type MountSpec,
  type PrepareOptions,
  pinNpxSpec,
  type RegistryTrust,
  type Sandbox,
  type SandboxBackend,
  type SandboxEvent,
  SandboxFailureError,
  type SandboxSpec,
  SPECIFICATION_VERSION,
  silentLogger,
  UsageError,
} from '@mcpsandbox/core';
import { adaptChild, type SpawnedProcess, startChild } from './child-process.js';
import { copyIn } from './copy-in.js';
import { DenialReporter, SyntheticNames } from './egress.js';
import { type NetGrant, parseGrant } from './grants.js';
import { closeDir, type OpenDir, openDirAt, readFileAt, removeAt, writeFileAt } from './host-fs.js';
import { INSTALL_DEADLINE_MS, installWorkerPath, startInstallWorker } from './install-worker.js';
import { type LimitPlan, planLimits } from './limits.js';
import { unwritableMountWarnings } from './mount-access.js';
import { endNamespace, identifyInit, killInit, type NamespaceInit } from './namespace.js';
import { outerBwrapArgs, relaySource, SandboxNetwork, writeResolverFiles } from './network.js';
import { type NpxCacheOptions, prepareNpx, registryAccess } from './npx.js';
import { ownFiles } from './own-files.js';
import { type LocalSandboxInfo, probeLocalSandbox } from './probe.js';
import type { Resolver } from './proxy.js';
import { buildSeccompFilter } from './seccomp.js';
import { checkStateName, defaultStateRoot, openState, type StateDirs } from './state.js';
import { planTlsTrust, type TlsTrust, tlsTrustNames } from './tls-trust.js';
import type { Dialer } from './transparent.js';
import {
  type Bind,
  commandBinds,
  dedupeBinds,
  hiddenRoots,
  isHidden,
  isInside,
  locateCommand,
  SANDBOX_HOME,
  SANDBOX_TMP,
  sandboxPath,
  systemView,
} from './view.js';

/** The loopback port inside the sandbox where its granted egress proxy listens. */
export const SANDBOX_PROXY_PORT = 3128;

export interface LocalBackendOptions extends BackendFactoryOptions {
  /** Host directory for each sandbox's private home and tmp (default: the OS temp dir). */
  readonly stateDir?: string;
  /** Root of the persistent npx install cache (default `$XDG_CACHE_HOME/mcp-sandbox/npm`). */
  readonly npmCacheDir?: string;
  /** The npm registry installs may reach (default: `npm config get registry`). */
  readonly npmRegistry?: string;
  /** Who the sandbox runs as when this process is root (default nobody, 65534). */
  readonly runAsWhenRoot?: { readonly uid: number; readonly gid: number };
  /** Process limit when the spec gives none (default 256; threads count too). */
  readonly defaultMaxProcesses?: number;
  /** Size cap of the in-memory `/tmp` of each command `exec` starts (default 512 MiB). */
  readonly tmpSizeBytes?: number;
  /** Size cap of the in-memory `/dev/shm` of each command `exec` starts (default 256 MiB). */
  readonly shmSizeBytes?: number;
  /** `--install-env`: variables for the npx install step only, never the server (also setting `installEnv`, JSON). */
  readonly installEnv?: Readonly<Record<string, string>>;
  /**
   * Install in this process, with the spec as given (no pinning): the background install worker
   * itself. Otherwise a first install runs in a detached worker that outlives an abandoned start.
   */
  readonly inlineInstall?: boolean;
  /** Replaces the start-up probe (diagnostics and tests). */
  readonly probe?: () => Promise<LocalSandboxInfo>;
  /** Replaces DNS for the egress proxy (tests). */
  readonly resolve?: Resolver;
  /** Replaces the egress proxy's upstream connect to a checked address (tests). */
  readonly dial?: Dialer;
  /**
   * Forward the host's TLS trust variables (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, …) and make the
   * files they name visible read-only (default true; setting `hostTlsTrust=off`).
   */
  readonly hostTlsTrust?: boolean;
  /**
   * Without grants, still answer the sandbox's DNS lookups (all refused) so that each refused
   * name is reported with the flag that would allow it (default true; setting `denialHints=off`).
   */
  readonly denialHints?: boolean;
}

export const DEFAULT_MAX_PROCESSES = 256;
/** `/tmp` and `/dev/shm` are tmpfs (memory): these caps bound what a server can pin there. */
export const DEFAULT_TMP_SIZE = 512 * 2 ** 20;
export const DEFAULT_SHM_SIZE = 256 * 2 ** 20;

const SIZE_UNITS: Record<string, number> = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 };

/** `1048576`, `64M`, `512MiB`, `1G`: binary units. Undefined for anything else. */
export function parseByteSize(text: string): number | undefined {
  const match = /^(\d+)\s*([kmg]?)(?:i?b)?$/i.exec(text.trim());
  if (!match) return undefined;
  const bytes = Number(match[1]) * (SIZE_UNITS[(match[2] ?? '').toLowerCase()] ?? Number.NaN);
  return Number.isSafeInteger(bytes) && bytes >= 4096 ? bytes : undefined;
}

/**
 * The `local` backend: each process runs under bubblewrap in fresh user, mount, pid, ipc, uts
 * and network namespaces, with a read-only view of the system, a private home and tmp, a
 * seccomp filter and no network unless granted. Construction does no I/O; the first `create`
 * probes the machine and fails with a typed error naming the fix when the sandbox cannot work.
 */
export function createLocalBackend(options: LocalBackendOptions = {}): SandboxBackend {
  const logger = options.logger ?? silentLogger;
  const hostEnv = options.hostEnv ?? process.env;
  // `--backend-option key=value`: stateDir, npmCacheDir, npmRegistry, npmUserCache, maxProcesses,
  // tmpSize, shmSize, stateRoot; and from run's own flags: state (--state), autoMount (--no-auto-mount).
  const settings = options.settings ?? {};
  const stateName = settings.state === undefined ? undefined : checkStateName(settings.state);
  const autoMount = settings.autoMount !== 'false';
  // `--install-allow-net`: hosts the npx install step may reach besides the registry.
  const installHosts = (settings.installAllowNet ?? '').split(',').filter(Boolean);
  for (const host of installHosts) parseGrant(host);
  const installEnv = options.installEnv ?? parseInstallEnv(settings.installEnv);
  const settingSize = (key: string): number | undefined => {
    const value = settings[key];
    if (value === undefined) return undefined;
    const bytes = parseByteSize(value);
    if (bytes === undefined) {
      throw new UsageError(
        `backend option ${key} must be a size such as 64M or 1G (at least 4096 bytes), not "${value}"`,
      );
    }
    return bytes;
  };
  const tmpSize = options.tmpSizeBytes ?? settingSize('tmpSize') ?? DEFAULT_TMP_SIZE;
  const shmSize = options.shmSizeBytes ?? settingSize('shmSize') ?? DEFAULT_SHM_SIZE;
  const settingNumber = (key: string): number | undefined => {
    const value = settings[key];
    if (value === undefined) return undefined;
    const number = Number(value);
    if (!Number.isSafeInteger(number) || number <= 0) {
      throw new UsageError(`backend option ${key} must be a positive integer, not "${value}"`);
    }
    return number;
  };
  const tlsTrust =
    options.hostTlsTrust ?? !['off', 'false', '0', 'no'].includes(settings.hostTlsTrust ?? 'on');
  const trustNames = tlsTrust ? tlsTrustNames(hostEnv) : [];
  const trustNote = trustNames.length > 0 ? `; host TLS trust: ${trustNames.join(', ')}` : '';
  let info: LocalSandboxInfo | undefined;
  let probing: Promise<LocalSandboxInfo> | undefined;
  const probe = () => {
    probing ??= (
      options.probe?.() ??
      probeLocalSandbox({
        hostEnv,
        ...(options.runAsWhenRoot ? { runAsWhenRoot: options.runAsWhenRoot } : {}),
      })
    ).then((result) => {
      info = result;
      for (const warning of result.warnings) logger.warn(warning);
      return result;
    });
    // A failed probe is retried on the next create: the user may have installed bwrap meanwhile.
    probing.catch(() => {
      probing = undefined;
    });
    return probing;
  };
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'local',
    isolation: 'os',
    describe: () =>
      info
        ? `bubblewrap ${info.bwrapVersion}: user, mount, pid, ipc, uts and network namespaces, seccomp, ` +
          `read-only system, private home and tmp${info.runAs ? `, as uid ${info.runAs.uid}` : ''}${trustNote}`
        : `bubblewrap OS sandbox (namespaces, seccomp, read-only system)${trustNote}`,
    async create(spec, createOptions) {
      const found = await probe();
      createOptions?.signal?.throwIfAborted();
      const grants = parseGrants(spec.network?.allow);
      checkMounts(spec.mounts ?? []);
      const limits = planLimits(spec.limits, {
        prlimit: found.prlimitPath !== undefined,
        defaultMaxProcesses:
          options.defaultMaxProcesses ?? settingNumber('maxProcesses') ?? DEFAULT_MAX_PROCESSES,
        hardLimits: readHardLimits(),
      });
      for (const note of limits.notes) logger.warn(note);
      spec.onEvent?.({ type: 'limits', enforced: limits.enforced, notEnforced: limits.notEnforced });
      const home = hostEnv.HOME ?? homedir();
      const trust = tlsTrust ? planTlsTrust(hostEnv, hiddenRoots(home)) : undefined;
      for (const note of trust?.notes ?? []) logger.warn(note);
      const stateDir = options.stateDir ?? settings.stateDir ?? tmpdir();
      const stateRoot = settings.stateRoot ?? defaultStateRoot(hostEnv, home, found.runAs !== undefined);
      const npm: NpxCacheOptions = {
        // The fetch half of an install may use the user's own npm cache (`npmUserCache=off`: never).
        ...(settings.npmUserCache === 'off'
          ? {}
          : {
              userCache: {
                stateDir,
                statePrefix: STATE_PREFIX,
                stateRoot,
                hidden: [home, ...hiddenRoots(home)],
              },
            }),
        cacheRoot:
          options.npmCacheDir ??
          settings.npmCacheDir ??
          defaultNpmCache(hostEnv, home, found.runAs !== undefined && !found.staging),
        hostEnv,
        ...(installHosts.length > 0 ? { installHosts } : {}),
        ...(Object.keys(installEnv).length > 0 ? { installEnv } : {}),
        ...((options.npmRegistry ?? settings.npmRegistry)
          ? { registry: options.npmRegistry ?? settings.npmRegistry }
          : {}),
      };
      checkMountsSpareHostState(spec.mounts ?? [], { stateDir, cacheRoot: npm.cacheRoot, stateRoot });
      if (stateName) spec.onEvent?.({ type: 'state', name: stateName, root: stateRoot });
      for (const warning of unwritableMountWarnings(spec.mounts ?? [], found.runAs)) logger.warn(warning);
      const sandbox = new LocalSandbox({
        spec,
        info: found,
        grants,
        limits,
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
        ...(options.runAsWhenRoot ? { runAsWhenRoot: options.runAsWhenRoot } : {}),
        ...(options.resolve ? { resolve: options.resolve } : {}),
        ...(options.dial ? { dial: options.dial } : {}),
        ...(trust ? { tlsTrust: trust } : {}),
        denialHints:
          options.denialHints ?? !['off', 'false', '0', 'no'].includes(settings.denialHints ?? 'on'),
      });
      try {
        await sandbox.stageCopies();
      } catch (error) {
        await sandbox.close();
        throw error;
      }
      return sandbox;
    },
  };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The `installEnv` setting: a JSON object of variable names to string values. */
function parseInstallEnv(text: string | undefined): Record<string, string> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const valid =
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.entries(value).every(([name, v]) => ENV_NAME.test(name) && typeof v === 'string');
  if (!valid) {
    throw new UsageError(
      'backend option installEnv must be a JSON object of variable names to strings; use --install-env KEY=value',
    );
  }
  return { ...(value as Record<string, string>) };
}

/**
 * `$XDG_CACHE_HOME/mcp-sandbox/npm`, or `~/.cache/…` (hidden from every sandbox). As root
 * without the tools to bind from root's 0700 home, the cache lives in /var/cache instead.
 */
export function defaultNpmCache(
  hostEnv: Readonly<Record<string, string | undefined>>,
  home: string,
  runsAsOther: boolean,
): string {
  if (hostEnv.XDG_CACHE_HOME) return join(hostEnv.XDG_CACHE_HOME, 'mcp-sandbox', 'npm');
  if (runsAsOther) return '/var/cache/mcp-sandbox/npm';
  return join(home, '.cache', 'mcp-sandbox', 'npm');
}

/**
 * Mount grants must name an existing host path and an absolute place inside; `systemView` makes
 * room for a target the read-only system lacks. The sandbox's own /, /proc and /dev are refused.
 */
export function checkMounts(mounts: readonly MountSpec[]): void {
  for (const mount of mounts) {
    if (!isAbsolute(mount.hostPath) || !isAbsolute(mount.sandboxPath)) {
      throw new UsageError(`mount paths must be absolute: ${mount.hostPath} -> ${mount.sandboxPath}`);
    }
    if (!existsSync(mount.hostPath)) throw new UsageError(`mount source does not exist: ${mount.hostPath}`);
    // Any absolute target works (see systemView), but not the sandbox's own /, /proc and /dev.
    if (mount.sandboxPath === '/' || ['/proc', '/dev'].some((place) => isInside(mount.sandboxPath, place))) {
      throw new UsageError(
        `cannot mount at ${mount.sandboxPath}: the sandbox's /, /proc and /dev are its own; choose another path`,
      );
    }
  }
}

/**
 * A writable mount must not reach the host's own bookkeeping: the sandboxes' state directories
 * (every sandbox's home) and the install cache hold what the host later reads, renames and
 * removes. Refused: a mount that contains either, or lies inside the cache or a state directory.
 */
export function checkMountsSpareHostState(
  mounts: readonly MountSpec[],
  places: { readonly stateDir: string; readonly cacheRoot: string; readonly stateRoot?: string },
): void {
  const real = realOrSelf;
  const stateDir = real(places.stateDir);
  const cacheRoot = real(places.cacheRoot);
  const stateRoot = places.stateRoot === undefined ? undefined : real(places.stateRoot);
  for (const mount of mounts) {
    if (mount.mode !== 'rw') continue;
    const source = real(mount.hostPath);
    const inState =
      isInside(source, stateDir) &&
      source.slice(stateDir.length).split('/').filter(Boolean)[0]?.startsWith(STATE_PREFIX) === true;
    const what =
      isInside(cacheRoot, source) || isInside(source, cacheRoot)
        ? `the install cache (${cacheRoot})`
        : isInside(stateDir, source) || inState
          ? `the sandboxes' state directory (${stateDir})`
          : stateRoot !== undefined && (isInside(stateRoot, source) || isInside(source, stateRoot))
            ? `the servers' named state (${stateRoot})`
            : undefined;
    if (what) {
      throw new UsageError(
        `cannot mount ${mount.hostPath} read-write: it overlaps ${what}, which only mcp-sandbox may change; ` +
          'mount it read-only or choose another directory',
      );
    }
  }
}

export function parseGrants(allow: readonly string[] | undefined): NetGrant[] {
  return (allow ?? []).map(parseGrant);
}

interface SandboxConfig {
  readonly spec: SandboxSpec;
  readonly info: LocalSandboxInfo;
  readonly grants: readonly NetGrant[];
  readonly limits: LimitPlan;
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
  readonly tlsTrust?: TlsTrust;
  readonly denialHints: boolean;
  /** The background install worker itself: install here, no pinning (see LocalBackendOptions). */
  readonly inlineInstall: boolean;
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

interface EgressState {
  readonly names: SyntheticNames;
  readonly reporter: DenialReporter;
  readonly files: ReturnType<typeof writeResolverFiles>;
}

interface Live {
  readonly proc: SpawnedProcess;
  readonly done: Promise<void>;
}

class LocalSandbox implements Sandbox {
  readonly id = `local-${randomUUID()}`;
  readonly #config: SandboxConfig;
  readonly #root: string;
  /** What fstat said of #root when it was made: close() removes that directory and no other. */
  readonly #rootId: { readonly dev: number; readonly ino: number };
  readonly #home: string;
  readonly #roots: string[];
  readonly #insideHome: string;
  readonly #live = new Set<Live>();
  /** The pid-namespace init of every process started, kept after it exits: see #shutdown. */
  readonly #inits: Promise<NamespaceInit | undefined>[] = [];
  readonly #disarmTtl: () => void;
  readonly #seccomp: Uint8Array;
  /** Binds added by prepare() (the installed package), for every later exec. */
  readonly #extraBinds: Bind[] = [];
  /** Host copies of `copy` mounts, by their index in the spec. */
  readonly #copies = new Map<number, string>();
  readonly #state: StateDirs | undefined;
  /** Own-file paths already announced, so that each is said once. */
  readonly #shown = new Set<string>();
  #staged = 0;
  /** Egress state shared by every exec: one synthetic address per name, one hint per name. */
  #egress: EgressState | undefined;
  #closing: Promise<void> | undefined;

  constructor(config: SandboxConfig) {
    this.#config = config;
    this.#roots = hiddenRoots(config.hostHome);
    this.#insideHome = this.#roots.includes('/home') ? SANDBOX_HOME : '/run/sandbox-home';
    this.#seccomp = buildSeccompFilter(config.info.arch);
    sweepAbandoned(config.stateDir);
    // The root stays ours: only home/ inside it is the sandbox's (and the only part on disk;
    // /tmp and /dev/shm are capped tmpfs that vanish with the sandbox's mount namespace).
    // As root the sandbox user needs to pass through it (0711) but not to list or change it.
    const runAs = config.info.runAs;
    this.#root = mkdtempSync(join(config.stateDir, STATE_PREFIX));
    let root: OpenDir | undefined;
    try {
      chmodSync(this.#root, runAs ? 0o711 : 0o700);
      const state = openDirPlain(config.stateDir);
      try {
        root = openDirAt({ fd: state, stat: fstatSync(state) }, basename(this.#root));
      } finally {
        closeSync(state);
      }
      if (!root) throw new SandboxFailureError(`${this.#root} vanished`, { code: 'E_STATE_DIR' });
      this.#rootId = { dev: root.stat.dev, ino: root.stat.ino };
      // Who owns this directory: a later sandbox removes it if this process dies without close().
      writeFileAt(root, OWNER_FILE, String(process.pid));
    } finally {
      closeDir(root);
    }
    this.#state = config.state ? openState(config.state.root, config.state.name, runAs) : undefined;
    if (this.#state) this.#home = this.#state.home;
    else {
      this.#home = join(this.#root, 'home');
      mkdirSync(this.#home, { mode: 0o700 });
      if (runAs) chownSync(this.#home, runAs.uid, runAs.gid);
    }
    this.#disarmTtl = armTtl(config.spec, () => void this.close());
  }

  /**
   * `copy` mounts: a private copy of each under this sandbox's directory, before any process of
   * the sandbox exists; bound read-write, removed with the rest on close.
   */
  async stageCopies(): Promise<void> {
    const { spec, info } = this.#config;
    for (const [index, mount] of (spec.mounts ?? []).entries()) {
      if (mount.mode !== 'copy') continue;
      const copies = join(this.#root, 'copies');
      mkdirSync(copies, { recursive: true, mode: 0o700 });
      if (info.runAs) chownSync(copies, info.runAs.uid, info.runAs.gid);
      const dest = join(copies, String(index));
      const copied = await copyIn(mount.hostPath, dest, {
        limits: COPY_LIMITS,
        ...(info.runAs ? { owner: info.runAs } : {}),
      });
      this.#copies.set(index, dest);
      spec.onEvent?.({ type: 'copied-in', sandboxPath: mount.sandboxPath, ...copied });
    }
  }

  /** Host directory holding this sandbox's private home and tmp (removed on close). */
  get hostDirectory(): string {
    return this.#root;
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<SpawnedProcess> {
    if (options.purpose !== 'setup') return this.spawn(command, options, {});
    // A --setup step installs: the registry and nothing the server is granted, as the npx
    // install step. What it installs globally lands in the home, where the server finds it.
    const access = await registryAccess(this.#config.npm);
    return this.spawn(
      command,
      { ...options, network: { allow: [access.grant] }, env: { ...access.env, ...options.env } },
      { binds: access.binds, setup: true },
    );
  }

  async prepare(command: readonly string[], options: PrepareOptions): Promise<readonly string[]> {
    this.#assertOpen();
    const inline = this.#config.inlineInstall;
    const worker = inline ? undefined : installWorkerPath();
    const npm = this.#config.npm;
    const result = await prepareNpx(command, options, {
      cache: npm,
      runAs: this.#config.info.runAs,
      onEvent: this.#config.spec.onEvent,
      logger: this.#config.logger,
      // The worker gets the spec already pinned by the start that asked for it.
      ...(inline
        ? {}
        : {
            pin: (spec: string, registry: string, trust: RegistryTrust) =>
              pinNpxSpec(spec, {
                registry,
                trust,
                lockFile: defaultPinLockFile(this.#config.hostEnv, this.#config.hostHome),
                logger: this.#config.logger,
              }),
          }),
      ...(worker
        ? {
            background: (spec: string, registry: string) =>
              startInstallWorker(
                worker,
                {
                  spec,
                  registry,
                  cacheRoot: npm.cacheRoot,
                  installHosts: npm.installHosts ?? [],
                  installEnv: npm.installEnv ?? {},
                  userCache: npm.userCache !== undefined,
                  stateDir: this.#config.stateDir,
                  ...(npm.userCache?.stateRoot ? { stateRoot: npm.userCache.stateRoot } : {}),
                  deadlineMs: INSTALL_DEADLINE_MS,
                  ...(this.#config.runAsWhenRoot ? { runAsWhenRoot: this.#config.runAsWhenRoot } : {}),
                },
                this.#config.hostEnv,
              ),
          }
        : {}),
      install: (argv, binds, network, env, onEvent) =>
        this.spawn(argv, { network, env }, { binds, install: true, onEvent }),
    });
    if (result.bind) this.#extraBinds.push(result.bind);
    if (result.bind && result.package) await this.#writableLayer(result.bind, result.package, options);
    return result.command;
  }

  /**
   * A server that writes next to its own code (server-memory keeps memory.jsonl in its dist/)
   * gets a writable copy of its own package directory over the read-only cache entry: kept in
   * its named state across sessions, or in this session's directory. The copy is made inside a
   * sandbox (no network, no environment, no mounts), so the host never walks what the install
   * scripts wrote.
   */
  async #writableLayer(
    cache: Bind,
    pkg: { readonly key: string; readonly dir: string },
    options: PrepareOptions,
  ): Promise<void> {
    let copy: { readonly dir: string; readonly fresh: boolean };
    if (this.#state) copy = this.#state.packageCopy(pkg.key);
    else {
      const dir = join(this.#root, 'pkg');
      mkdirSync(dir, { mode: 0o700 });
      const runAs = this.#config.info.runAs;
      if (runAs) chownSync(dir, runAs.uid, runAs.gid);
      copy = { dir, fresh: true };
    }
    if (copy.fresh) {
      const target = '/run/mcp-sandbox/writable';
      const proc = await this.spawn(
        ['cp', '-R', '-P', '--preserve=mode,timestamps', `${pkg.dir}/.`, `${target}/`],
        { network: { allow: [] } },
        { binds: [cache, { source: copy.dir, dest: target, mode: 'rw' }], install: true },
      );
      void proc.closeStdin();
      let said = '';
      const drain = async (stream: AsyncIterable<Uint8Array>) => {
        for await (const chunk of stream) said = (said + Buffer.from(chunk).toString()).slice(-1000);
      };
      const [status] = await Promise.all([proc.exit, drain(proc.stdout), drain(proc.stderr)]);
      options.signal?.throwIfAborted();
      if (status.code !== 0) {
        throw new SandboxFailureError(
          `could not make the server's package writable (cp exited ${status.code ?? status.signal}): ${said.trim()}`,
          { code: 'E_PREPARE' },
        );
      }
    }
    this.#config.spec.onEvent?.({
      type: 'writable-package',
      dir: pkg.dir,
      persistent: this.#state !== undefined,
    });
    this.#extraBinds.push({ source: copy.dir, dest: pkg.dir, mode: 'rw' });
  }

  async spawn(
    requested: readonly string[],
    options: ExecOptions,
    extras: SpawnExtras,
  ): Promise<SpawnedProcess> {
    this.#assertOpen();
    const { hostEnv, info, spec } = this.#config;
    const own =
      this.#config.autoMount && extras.install !== true
        ? ownFiles(requested, process.cwd(), this.#roots, this.#config.hostHome)
        : undefined;
    const command = own?.command ?? requested;
    const [name] = command;
    if (name === undefined) throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
    const grants = options.network ? parseGrants(options.network.allow) : this.#config.grants;
    const networked = grants.length > 0;
    // Without grants the sandbox still gets the DNS responder (unless turned off), for the hints.
    const layered = networked || this.#config.denialHints;

    // What to bind so that the command and node (the relay, `#!/usr/bin/env node`) can start.
    const binds: Bind[] = [];
    const pathDirs: string[] = [];
    const install = extras.install === true;
    // Install and setup steps get none of the spec's environment or mounts.
    const isolated = install || extras.setup === true;
    const mounted = [...(install ? [] : this.#extraBinds), ...(extras.binds ?? [])];
    const insideOnly = mounted.some((bind) => name.startsWith(`${bind.dest}/`));
    const onHost = insideOnly ? name : locateCommand(name, hostEnv.PATH, process.cwd());
    // Not on the host: a bare name may still be on the sandbox's own PATH (installed by --setup
    // into the home): the sandbox's shell looks it up, and says so when it is not there either.
    const lookInside = onHost === undefined && !name.includes('/');
    if (onHost === undefined && !lookInside) {
      throw new SandboxFailureError(`command not found: ${name}`, { code: 'E_COMMAND_NOT_FOUND' });
    }
    const found = onHost ?? name;
    // A command inside a writable mount was chosen by the sandbox (an earlier session could have
    // rewritten it): its symlinks and `#!` line must not decide which hidden host paths get bound.
    const inWritableMount = (isolated ? [] : (spec.mounts ?? [])).some(
      (mount) =>
        mount.mode === 'rw' &&
        (isInside(found, mount.hostPath) || isInside(realOrSelf(found), realOrSelf(mount.hostPath))),
    );
    if (!insideOnly && !inWritableMount && !lookInside) {
      const planned = commandBinds(found, this.#roots);
      binds.push(...planned.binds);
      if (planned.pathDir) pathDirs.push(planned.pathDir);
    }
    for (const bind of own?.binds ?? []) {
      binds.push(bind);
      if (this.#shown.has(bind.source)) continue;
      this.#shown.add(bind.source);
      this.#config.logger.info(
        `showing ${bind.source} read-only at the same path: the server's own files (--no-auto-mount turns this off)`,
      );
      spec.onEvent?.({ type: 'auto-mount', path: bind.source });
    }
    // Our own node, for the relay and `#!/usr/bin/env node` scripts. Optional when the sandbox
    // user cannot reach it (root's ~/.nvm) and no relay is needed: the system node may do.
    const ownNode = commandBinds(process.execPath, this.#roots);
    const runAs = info.runAs;
    const bindable = (bind: Bind) =>
      runAs === undefined ||
      reachableBy(bind.source, runAs) ||
      (info.staging !== undefined && readableItself(bind.source, runAs));
    if (networked || ownNode.binds.every(bindable)) {
      binds.push(...ownNode.binds);
      if (ownNode.pathDir) pathDirs.push(ownNode.pathDir);
    }
    const userBinds: Bind[] = (isolated ? [] : (spec.mounts ?? [])).map((m, index): Bind => {
      if (m.mode !== 'copy') return { source: m.hostPath, dest: m.sandboxPath, mode: m.mode };
      // Never the original: a copy mount the host did not stage is an error, not a live bind.
      const copy = this.#copies.get(index);
      if (copy === undefined) throw new SandboxFailureError('copy mount not staged', { code: 'E_COPY' });
      return { source: copy, dest: m.sandboxPath, mode: 'rw' };
    });
    // The host's TLS trust: a variable crosses only when the sandbox can see what it names.
    const trustEnv: Record<string, string> = {};
    for (const entry of this.#config.tlsTrust?.entries ?? []) {
      const needed = entry.binds.filter((bind) => isHidden(bind.source, this.#roots));
      if (!needed.every(bindable)) continue;
      userBinds.push(...needed);
      trustEnv[entry.name] = entry.value;
    }

    // `npm install -g` (a --setup step) installs into the home, whose bin/ comes first on PATH.
    const npmPrefix = `${this.#insideHome}/.npm-global`;
    const env: Record<string, string> = {
      PATH: sandboxPath([`${npmPrefix}/bin`, ...pathDirs], hostEnv.PATH, this.#roots),
      HOME: this.#insideHome,
      TMPDIR: SANDBOX_TMP,
      LANG: hostEnv.LANG || 'C.UTF-8',
      ...trustEnv,
      ...(extras.setup ? { NPM_CONFIG_PREFIX: npmPrefix } : {}),
      ...(isolated ? {} : spec.env),
      ...options.env,
    };
    if (networked) Object.assign(env, proxyEnv(SANDBOX_PROXY_PORT));

    const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'];
    const INFO_FD = 3;
    const SECCOMP_FD = 4;
    let ipcFd: number | undefined;
    if (layered) {
      ipcFd = stdio.length;
      stdio.push('ipc');
    }
    const staged: string[] = [];
    const bindArgs = (bind: Bind): string[] => {
      const flag = bind.mode === 'rw' ? '--bind' : '--ro-bind';
      // bwrap runs unprivileged: as root we run it as nobody, who must be able to reach the source.
      if (!info.runAs || reachableBy(bind.source, info.runAs)) return [flag, bind.source, bind.dest];
      // Behind a directory nobody may enter (root's home): bind it, as root, onto a place nobody
      // can reach, in a mount namespace of its own that vanishes with the sandbox.
      if (info.staging && readableItself(bind.source, info.runAs)) {
        const stage = join(this.#root, 'binds', String(this.#staged++));
        if (statSync(bind.source).isDirectory()) mkdirSync(stage, { recursive: true });
        else {
          mkdirSync(dirname(stage), { recursive: true });
          writeFileSync(stage, '');
        }
        staged.push(bind.source, stage);
        return [flag, stage, bind.dest];
      }
      throw new SandboxFailureError(
        `cannot bind ${bind.source} into the sandbox: mcp-sandbox runs as root, so the sandbox runs as ` +
          `uid ${info.runAs.uid}, which cannot read it. Make it readable (o+r, and o+x for directories) ` +
          'or run mcp-sandbox as a normal user',
        { code: 'E_BIND_UNREACHABLE' },
      );
    };

    // Mount targets missing from the system get a place to be made (see systemView).
    const view = systemView(
      userBinds.map((bind) => bind.dest),
      this.#roots,
    );
    const args = [
      '--unshare-user',
      '--unshare-ipc',
      '--unshare-pid',
      // With egress the network namespace comes from the outer layer (network.ts).
      ...(layered ? [] : ['--unshare-net']),
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
      '--hostname',
      'mcp-sandbox',
      ...view.args,
      '--dev',
      '/dev',
      // bwrap's /dev is itself an uncapped tmpfs: read-only, with a capped /dev/shm on top.
      '--remount-ro',
      '/dev',
      '--size',
      String(this.#config.shmSize),
      '--tmpfs',
      '/dev/shm',
      '--proc',
      '/proc',
    ];
    const tmpfsRoots = this.#roots.filter((root) => root !== SANDBOX_TMP);
    for (const root of tmpfsRoots) args.push('--tmpfs', root);
    // /tmp lives in memory, capped, one per command (shared with its children): nothing of it
    // reaches the host's disk or outlives the command's mount namespace.
    args.push('--size', String(this.#config.tmpSize), '--tmpfs', SANDBOX_TMP);
    if (install) args.push('--size', String(this.#config.tmpSize), '--tmpfs', this.#insideHome);
    else args.push('--bind', this.#home, this.#insideHome);
    for (const bind of dedupeBinds([...binds, ...mounted])) args.push(...bindArgs(bind));
    for (const bind of userBinds) args.push(...bindArgs(bind));
    // The hidden roots stay empty and read-only: the private home and tmp are the only writable places.
    for (const root of tmpfsRoots) args.push('--remount-ro', root);
    for (const dir of view.readOnly) args.push('--remount-ro', dir);
    // --- egress: the sandbox's own resolver files and, as in the outer layer, its own uid.
    let network: SandboxNetwork | undefined;
    // An install step's own observer sees the proxy's decisions too.
    const installObserver = extras.onEvent;
    const onEvent = installObserver
      ? (event: SandboxEvent) => {
          spec.onEvent?.(event);
          installObserver(event);
        }
      : spec.onEvent;
    if (layered) {
      const egress = this.#egressState();
      network = new SandboxNetwork({
        grants,
        names: egress.names,
        reporter: egress.reporter,
        proxyPort: SANDBOX_PROXY_PORT,
        logger: this.#config.logger,
        ...(onEvent ? { onEvent } : {}),
        ...(this.#config.resolve ? { resolve: this.#config.resolve } : {}),
        ...(this.#config.dial ? { dial: this.#config.dial } : {}),
      });
      const { resolv, hosts, nsswitch } = egress.files;
      args.push('--ro-bind', resolv, '/etc/resolv.conf', '--ro-bind', hosts, '/etc/hosts');
      args.push('--ro-bind', nsswitch, '/etc/nsswitch.conf');
      const uid = info.runAs?.uid ?? process.getuid?.() ?? 0;
      const gid = info.runAs?.gid ?? process.getgid?.() ?? 0;
      args.push('--uid', String(uid), '--gid', String(gid));
    }
    // --- end egress
    args.push('--seccomp', String(SECCOMP_FD), '--info-fd', String(INFO_FD));
    if (options.cwd) args.push('--chdir', options.cwd);
    const target = lookInside
      ? [
          '/bin/sh',
          '-c',
          'command -v "$0" >/dev/null 2>&1 || { echo "mcp-sandbox: command not found: $0 (not on this machine, nor on the sandbox PATH)" >&2; exit 127; }; exec "$0" "$@"',
          ...command,
        ]
      : command;
    args.push('--', ...this.#launcher(target));
    // With egress, bwrap runs inside the outer layer, after the relay (network.ts).
    const bwrapArgv =
      network && ipcFd !== undefined
        ? [
            info.bwrapPath,
            ...outerBwrapArgs(),
            '--',
            ...this.#relayLauncher(network, ipcFd, [INFO_FD, SECCOMP_FD]),
            info.bwrapPath,
            ...args,
          ]
        : [info.bwrapPath, ...args];

    let child: ChildProcess;
    if (staged.length > 0 && info.runAs && info.staging) {
      const { unshare, mount, setpriv } = info.staging;
      const script = `while [ "$1" != -- ]; do "$0" --bind "$1" "$2" || exit 126; shift 2; done; shift; exec "$@"`;
      const { uid, gid } = info.runAs;
      child = await startChild(
        unshare,
        [
          '--mount',
          '--propagation',
          'private',
          '--',
          '/bin/sh',
          '-c',
          script,
          mount,
          ...staged,
          '--',
          setpriv,
          `--reuid=${uid}`,
          `--regid=${gid}`,
          '--clear-groups',
          '--',
          ...bwrapArgv,
        ],
        { env, stdio },
      );
    } else {
      child = await startChild(bwrapArgv[0] as string, bwrapArgv.slice(1), {
        env,
        stdio,
        ...(info.runAs ? { uid: info.runAs.uid, gid: info.runAs.gid } : {}),
      });
    }
    const seccompPipe = child.stdio[SECCOMP_FD] as NodeJS.WritableStream;
    seccompPipe.on('error', () => {});
    seccompPipe.end(Buffer.from(this.#seccomp));

    const nsInit = readInfoPid(child.stdio[INFO_FD] as NodeJS.ReadableStream);
    const init = nsInit.then((pid) => (pid === undefined ? undefined : identifyInit(pid)));
    this.#inits.push(init);
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    const signal = (sig: KillSignal) => {
      if (exited) return;
      if (sig === 'SIGKILL') {
        // Killing the namespace's init makes the kernel kill everything inside; bwrap's own
        // --die-with-parent is not trusted (code inside may have changed the init).
        tryKill(child.pid as number, 'SIGKILL');
        void init.then((found) => found && killInit(found));
        return;
      }
      // The sandbox's session: its init ignores SIGTERM from outside, the command gets it.
      void nsInit.then((pid) => {
        if (pid !== undefined && !exited) tryKill(-pid, sig);
      });
    };
    const proc = adaptChild(child, { signal });

    if (network) {
      const active = network;
      const onMessage = (message: unknown, handle: unknown) => {
        if (!active.attach(message, handle)) return;
        child.off('message', onMessage);
        if (child.connected) child.disconnect();
      };
      child.on('message', onMessage);
    }
    const live: Live = {
      proc,
      done: proc.exit.then(() => {
        network?.close();
        if (child.connected) child.disconnect();
        this.#live.delete(live);
      }),
    };
    this.#live.add(live);
    // close() may have begun while bwrap was starting: it did not see this process, so end it here.
    if (this.#closing) await proc.kill('SIGKILL');
    return proc;
  }

  /** The argv bwrap executes: limits and a clean environment. */
  #launcher(command: readonly string[]): string[] {
    const { info, limits } = this.#config;
    const limited =
      info.prlimitPath && limits.prlimitArgs.length > 0
        ? [info.prlimitPath, ...limits.prlimitArgs, '--', ...command]
        : [...command];
    // bwrap sets PWD; the environment is the allowlist and nothing else.
    return ['/bin/sh', '-c', 'unset PWD; exec "$@"', 'sh', ...limited];
  }

  /**
   * The outer layer's argv before the inner bwrap: the relay opens the sandbox's sockets, with
   * the user's NODE_OPTIONS cleared (and no extra CA file to parse: it makes no TLS connection),
   * then the IPC channel is closed so nothing inside inherits it.
   */
  #relayLauncher(network: SandboxNetwork, ipcFd: number, bwrapFds: readonly number[]): string[] {
    const relay = `NODE_OPTIONS= NODE_EXTRA_CA_CERTS= "$0" -e "$1" "$2" "$$"`;
    // Egress waits for its sockets; the hints alone do not hold the server back. In the
    // background the relay holds none of the sandbox's descriptors but its channel: the host
    // reads bwrap's info pipe to its end, and the server's output to its end.
    const first = network.hintsOnly
      ? `${relay} </dev/null >/dev/null 2>&1 ${bwrapFds.map((fd) => `${fd}>&-`).join(' ')} &`
      : `${relay} || exit 125;`;
    const script = `${first} unset NODE_CHANNEL_FD NODE_CHANNEL_SERIALIZATION_MODE; exec ${ipcFd}>&-; shift 2; exec "$@"`;
    return ['/bin/sh', '-c', script, process.execPath, relaySource(), JSON.stringify(network.sockets)];
  }

  #egressState(): EgressState {
    this.#egress ??= {
      names: new SyntheticNames(),
      reporter: new DenialReporter(this.#config.spec.onEvent, this.#config.logger),
      files: writeResolverFiles(this.#root),
    };
    return this.#egress;
  }

  #assertOpen(): void {
    if (this.#closing) throw new SandboxFailureError('sandbox is closed', { code: 'E_SANDBOX_CLOSED' });
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#disarmTtl();
    const live = [...this.#live];
    await killAll(live.map(({ proc }) => proc));
    await Promise.all(live.map(({ done }) => done));
    // Whatever the outer processes did (they may be long gone), end every pid namespace this
    // sandbox started through its init, and check that nothing is left in it.
    const inits = await Promise.all(this.#inits);
    await Promise.all(
      inits.map(async (init) => {
        const left = init ? await endNamespace(init) : [];
        if (left.length > 0) {
          this.#config.logger.warn(
            `sandbox ${this.id}: killed ${left.length} process(es) left after its init`,
          );
        }
      }),
    );
    removeStateDir(this.#config.stateDir, basename(this.#root), this.#rootId);
    this.#state?.release();
  }
}

function proxyEnv(port: number): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: 'localhost,127.0.0.1,::1',
    no_proxy: 'localhost,127.0.0.1,::1',
    NODE_USE_ENV_PROXY: '1',
  };
}

/** The host pid of bwrap's child (the namespace's init), as soon as bwrap's info fd names it. */
function readInfoPid(stream: NodeJS.ReadableStream): Promise<number | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const done = (pid: number | undefined) => {
      stream.removeAllListeners('data');
      stream.resume();
      resolve(pid);
    };
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      const pid = /"child-pid"\s*:\s*(\d+)\s*[,}]/.exec(text)?.[1];
      if (pid !== undefined) done(Number(pid));
      else if (text.length > 64 * 1024) done(undefined);
    });
    stream.once('end', () => done(undefined));
    stream.once('error', () => done(undefined));
  });
}

function tryKill(pid: number, signal: KillSignal): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** True when `who` can read the path itself (and enter it, for a directory), whatever lies above. */
function readableItself(path: string, who: { readonly uid: number }): boolean {
  try {
    const stat = statSync(path);
    const bits = stat.isDirectory() ? 0o5 : 0o4;
    const mode = stat.uid === who.uid ? (stat.mode >> 6) & 0o7 : stat.mode & 0o7;
    return (mode & bits) === bits;
  } catch {
    return false;
  }
}

/** True when `who` can search every directory on the way and read the target (group bits ignored). */
function reachableBy(path: string, who: { readonly uid: number }): boolean {
  const allows = (mode: number, owner: number, bits: number) =>
    owner === who.uid ? (mode & (bits << 6)) !== 0 : (mode & bits) !== 0;
  try {
    let current = '';
    for (const part of path.split('/').filter(Boolean).slice(0, -1)) {
      current += `/${part}`;
      const stat = statSync(current);
      if (!allows(stat.mode, stat.uid, 0o1)) return false;
    }
    const stat = statSync(path);
    return allows(stat.mode, stat.uid, 0o4);
  } catch {
    return false;
  }
}

function readHardLimits(): Record<string, number | undefined> {
  try {
    const text = readFileSync('/proc/self/limits', 'utf8');
    const hard = (label: string) => {
      const line = text.split('\n').find((l) => l.startsWith(label));
      const value = line?.slice(26).trim().split(/\s+/)[1];
      return value === undefined || value === 'unlimited' ? undefined : Number(value);
    };
    return { nproc: hard('Max processes'), nofile: hard('Max open files'), data: hard('Max data size') };
  } catch {
    return {};
  }
}

const STATE_PREFIX = 'mcp-sandbox-';
const OWNER_FILE = '.owner-pid';

/** Opens a directory the host configured (the state dir), following it if it is a symlink. */
function openDirPlain(path: string): number {
  return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);
}

/**
 * Removes private directories left by host processes that were killed before close(). The
 * state dir may be shared (the OS temp dir): only directories owned by this user and writable
 * by no one else are considered, their owner file is read without following links, and the
 * removal never follows a link the sandbox planted in the home it leaves behind.
 */
function sweepAbandoned(stateDir: string): void {
  let state: number;
  try {
    state = openDirPlain(stateDir);
  } catch {
    return;
  }
  try {
    const parent: OpenDir = { fd: state, stat: fstatSync(state) };
    const uid = process.getuid?.() ?? 0;
    for (const name of readdirSync(`/proc/self/fd/${state}`)) {
      if (!name.startsWith(STATE_PREFIX)) continue;
      let dir: OpenDir | undefined;
      try {
        dir = openDirAt(parent, name);
        if (!dir || dir.stat.uid !== uid || (dir.stat.mode & 0o022) !== 0) continue;
        const text = readFileAt(dir, [OWNER_FILE], 32)?.toString('latin1') ?? '';
        if (!/^[1-9]\d{0,9}$/.test(text)) continue;
        if (isAlive(Number(text))) continue;
        const id = { dev: dir.stat.dev, ino: dir.stat.ino };
        closeDir(dir);
        dir = undefined;
        removeAt(parent, name, id);
      } catch {
        // not ours, or changed meanwhile: leave it
      } finally {
        closeDir(dir);
      }
    }
  } finally {
    closeSync(state);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes a sandbox's host directory: the one made at create (same inode), nothing it links to. */
function removeStateDir(stateDir: string, name: string, id: { dev: number; ino: number }): void {
  let state: number;
  try {
    state = openDirPlain(stateDir);
  } catch {
    return;
  }
  try {
    removeAt(state, name, id);
  } catch {
    // left for the sweep of a later start
  } finally {
    closeSync(state);
  }
}
