import type { ChildProcess, StdioOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, closeSync, fstatSync, mkdirSync, mkdtempSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  armTtl,
  type BackendFactoryOptions,
  COPY_LIMITS,
  defaultPinLockFile,
  type ExecOptions,
  killAll,
  type Logger,
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
} from '@mcpsandbox/core';
import {
  DenialReporter,
  type Dialer,
  type NetGrant,
  parseGrant,
  type Resolver,
  SyntheticNames,
} from '@mcpsandbox/egress';
import {
  type Bind,
  checkMountsSpareHostState,
  checkStateName,
  closeDir,
  commandBinds,
  copyIn,
  defaultNpmCache,
  defaultStateRoot,
  endNamespace,
  hiddenRoots,
  identifyInit,
  isHidden,
  isInside,
  locateCommand,
  type NamespaceInit,
  type NpxCacheOptions,
  type OpenDir,
  openDirAt,
  openState,
  ownFiles,
  planTlsTrust,
  prepareNpx,
  realOrSelf,
  registryAccess,
  SANDBOX_HOME,
  STATE_PREFIX,
  type StateDirs,
  type TlsTrust,
  tlsTrustNames,
  unwritableMountWarnings,
  writeFileAt,
} from '@mcpsandbox/host-side';
import { adaptChild, type SpawnedProcess } from './child-process.js';
import { INSTALL_DEADLINE_MS, installWorkerPath, startInstallWorker } from './install/launch.js';
import { type LimitPlan, planLimits } from './limits.js';
import type { LocalSandboxInfo } from './probe.js';
import { outerBwrapArgs, relaySource, SandboxNetwork, writeResolverFiles } from './relay/network.js';
import { resolverArgs } from './relay/resolver-args.js';
import { buildSeccompFilter } from './seccomp.js';
import { probeOnce } from './session/probe-once.js';
import {
  proxyEnv,
  reachableBy,
  readableItself,
  readHardLimits,
  readInfoPid,
} from './session/process-helpers.js';
import { lookInsideTarget, startBwrap } from './session/start-bwrap.js';
import { OWNER_FILE, openDirPlain, removeStateDir, sweepAbandoned } from './session/state-dir.js';
import {
  checkMounts,
  DEFAULT_MAX_PROCESSES,
  DEFAULT_SHM_SIZE,
  DEFAULT_TMP_SIZE,
  numberSetting,
  parseGrants,
  parseInstallEnv,
  sizeSetting,
} from './settings.js';
import { namespaceSignal } from './teardown/signal.js';
import { bindArgsFor } from './view/bind-args.js';
import { namespaceArgs } from './view/namespace-args.js';
import { SANDBOX_TMP, sandboxPath, systemView } from './view/system-view.js';

/** Where setup steps' `npm install -g` lands inside the sandbox (under the hidden, empty /run). */
export const SETUP_PREFIX = '/run/mcp-sandbox/setup';

/** The loopback port inside the sandbox where its granted egress proxy listens. */
export const SANDBOX_PROXY_PORT = 3128;

export { DEFAULT_MAX_PROCESSES } from './settings.js';

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

/**
 * The `local` backend: each process runs under bubblewrap in fresh user, mount, pid, ipc, uts
 * and network namespaces, with a read-only view of the system, a private home and tmp, a
 * seccomp filter and no network unless granted. Construction does no I/O; the first `create`
 * probes the machine and fails with a typed error naming the fix when the sandbox cannot work.
 */
export function createLocalBackend(options: LocalBackendOptions = {}): SandboxBackend {
  const logger = options.logger ?? silentLogger;
  const hostEnv = options.hostEnv ?? process.env;
  // `--backend-option key=value`: stateDir, npmCacheDir, npmRegistry, maxProcesses, tmpSize, shmSize,
  // stateRoot; and from run's own flags: state (--state), autoMount (--no-auto-mount).
  const settings = options.settings ?? {};
  const stateName = settings.state === undefined ? undefined : checkStateName(settings.state);
  const autoMount = settings.autoMount !== 'false';
  // `--install-allow-net`: hosts the npx install step may reach besides the registry.
  const installHosts = (settings.installAllowNet ?? '').split(',').filter(Boolean);
  for (const host of installHosts) parseGrant(host);
  const installEnv = options.installEnv ?? parseInstallEnv(settings.installEnv);
  const tmpSize = options.tmpSizeBytes ?? sizeSetting(settings, 'tmpSize') ?? DEFAULT_TMP_SIZE;
  const shmSize = options.shmSizeBytes ?? sizeSetting(settings, 'shmSize') ?? DEFAULT_SHM_SIZE;
  const tlsTrust =
    options.hostTlsTrust ?? !['off', 'false', '0', 'no'].includes(settings.hostTlsTrust ?? 'on');
  const trustNames = tlsTrust ? tlsTrustNames(hostEnv) : [];
  const trustNote = trustNames.length > 0 ? `; host TLS trust: ${trustNames.join(', ')}` : '';
  let info: LocalSandboxInfo | undefined;
  const probe = probeOnce(options, hostEnv, logger, (result) => {
    info = result;
  });
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
          options.defaultMaxProcesses ?? numberSetting(settings, 'maxProcesses') ?? DEFAULT_MAX_PROCESSES,
        hardLimits: readHardLimits(),
      });
      for (const note of limits.notes) logger.warn(note);
      spec.onEvent?.({ type: 'limits', enforced: limits.enforced, notEnforced: limits.notEnforced });
      const home = hostEnv.HOME ?? homedir();
      const trust = tlsTrust ? planTlsTrust(hostEnv, hiddenRoots(home)) : undefined;
      for (const note of trust?.notes ?? []) logger.warn(note);
      const npm = npmOptions(
        options,
        settings,
        hostEnv,
        defaultNpmCache(hostEnv, home, found.runAs !== undefined && !found.staging),
        { installHosts, installEnv },
      );
      const stateDir = options.stateDir ?? settings.stateDir ?? tmpdir();
      const stateRoot = settings.stateRoot ?? defaultStateRoot(hostEnv, home, found.runAs !== undefined);
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

/** Where and how the npx install step installs: the cache, the registry, the install's own grants and env. */
function npmOptions(
  options: LocalBackendOptions,
  settings: Readonly<Record<string, string>>,
  hostEnv: Readonly<Record<string, string | undefined>>,
  defaultCache: string,
  install: { readonly installHosts: string[]; readonly installEnv: Record<string, string> },
): NpxCacheOptions {
  const { installHosts, installEnv } = install;
  const registry = options.npmRegistry ?? settings.npmRegistry;
  return {
    cacheRoot: options.npmCacheDir ?? settings.npmCacheDir ?? defaultCache,
    hostEnv,
    ...(installHosts.length > 0 ? { installHosts } : {}),
    ...(Object.keys(installEnv).length > 0 ? { installEnv } : {}),
    ...(registry ? { registry } : {}),
  };
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

/** bwrap's info pipe (the namespace's init pid) and the pipe its seccomp filter is read from. */
const INFO_FD = 3;
const SECCOMP_FD = 4;

/** What one command sees: built by #planView, turned into bwrap arguments and its environment. */
interface ViewPlan {
  readonly command: readonly string[];
  readonly grants: readonly NetGrant[];
  readonly networked: boolean;
  /** Egress or denial hints: the outer network layer and the relay. */
  readonly layered: boolean;
  readonly install: boolean;
  /** Install and setup steps get none of the spec's environment or mounts. */
  readonly isolated: boolean;
  readonly setupBind: readonly Bind[];
  readonly mounted: readonly Bind[];
  readonly binds: readonly Bind[];
  readonly pathDirs: readonly string[];
  readonly userBinds: readonly Bind[];
  readonly trustEnv: Readonly<Record<string, string>>;
  readonly lookInside: boolean;
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
  /** Setup steps' own prefix and home (see #setupDirs); undefined until the first setup step. */
  #setup: { readonly prefix: string; readonly home: string } | undefined;
  /** Set by the first exec that is not a setup step: later setup steps are refused. */
  #serverStarted = false;
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
    if (options.purpose !== 'setup') {
      this.#serverStarted = true;
      return this.spawn(command, options, {});
    }
    // A setup step runs the user's commands with registry egress: never in anything a server
    // wrote. After the server started, the home and the setup prefix are the server's too.
    if (this.#serverStarted) {
      throw new SandboxFailureError(
        'a setup step must run before the server starts (the server may have changed its home)',
        { code: 'E_SETUP_ORDER' },
      );
    }
    this.#setupDirs();
    // A --setup step installs: the registry and nothing the server is granted, as the npx
    // install step. What it installs globally lands in the setup prefix, where the server finds it.
    const access = await registryAccess(this.#config.npm);
    return this.spawn(
      command,
      { ...options, network: { allow: [access.grant] }, env: { ...access.env, ...options.env } },
      { binds: access.binds, setup: true },
    );
  }

  /**
   * The setup steps' own directories, made on the first step: the npm prefix (`npm install -g`
   * lands there; its `bin` is on every later command's PATH) and, with `--state`, a home of
   * their own. A state home was written by earlier sessions' servers (an `npm` planted on PATH,
   * an `.npmrc` that npm obeys), so setup steps never run in it; without `--state` the session's
   * home is new and, since no server has started yet, holds only what earlier setup steps wrote.
   */
  #setupDirs(): { readonly prefix: string; readonly home: string } {
    if (this.#setup) return this.#setup;
    const runAs = this.#config.info.runAs;
    const base = join(this.#root, 'setup');
    mkdirSync(base, { mode: runAs ? 0o711 : 0o700 });
    const own = (dir: string): string => {
      mkdirSync(dir, { mode: 0o700 });
      if (runAs) chownSync(dir, runAs.uid, runAs.gid);
      return dir;
    };
    this.#setup = {
      prefix: own(join(base, 'npm')),
      home: this.#state ? own(join(base, 'home')) : this.#home,
    };
    return this.#setup;
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
    const { info } = this.#config;
    const plan = this.#planView(requested, options, extras);
    const env = this.#sandboxEnv(plan, options, extras);
    const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'];
    let ipcFd: number | undefined;
    if (plan.layered) {
      ipcFd = stdio.length;
      stdio.push('ipc');
    }
    const staged: string[] = [];
    const args = this.#bwrapArgs(plan, extras, staged);
    const network = plan.layered ? this.#network(plan.grants, extras) : undefined;
    if (network) args.push(...resolverArgs(this.#egressState().files, info));
    args.push('--seccomp', String(SECCOMP_FD), '--info-fd', String(INFO_FD));
    if (options.cwd) args.push('--chdir', options.cwd);
    const target = plan.lookInside ? lookInsideTarget(plan.command) : plan.command;
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
    const child = await startBwrap(info, bwrapArgv, staged, env, stdio);
    return this.#watch(child, network);
  }

  /** What the command needs to start, and what of the host it sees. */
  #planView(requested: readonly string[], options: ExecOptions, extras: SpawnExtras): ViewPlan {
    const { hostEnv, info, spec } = this.#config;
    const own =
      this.#config.autoMount && extras.install !== true
        ? ownFiles(requested, process.cwd(), this.#roots, this.#config.hostHome, this.#writableTrees())
        : undefined;
    for (const file of own?.skipped ?? []) {
      this.#config.logger.info(
        `not showing the server's own files for ${file}: its path passes through a read-write mount or a state directory, which a sandbox could have changed; mount its folder with --mount instead`,
      );
    }
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
    // The setup prefix: written by setup steps, then seen by the server (never an install step).
    const setupBind: Bind[] =
      this.#setup && !install ? [{ source: this.#setup.prefix, dest: SETUP_PREFIX, mode: 'rw' }] : [];
    const mounted = [...(isolated ? [] : this.#extraBinds), ...setupBind, ...(extras.binds ?? [])];
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
    const { userBinds, trustEnv } = this.#userBinds(isolated, bindable);
    return {
      command,
      grants,
      networked,
      layered,
      install,
      isolated,
      setupBind,
      mounted,
      binds,
      pathDirs,
      userBinds,
      trustEnv,
      lookInside,
    };
  }

  /** Host trees a sandbox can write: `rw` mounts, the state root, this session's directory. */
  #writableTrees(): string[] {
    const rw = (this.#config.spec.mounts ?? []).filter((m) => m.mode === 'rw').map((m) => m.hostPath);
    return [...rw, ...(this.#config.state ? [this.#config.state.root] : []), this.#root];
  }

  /** The spec's mounts (copies for `copy` mounts) and the host's TLS trust the sandbox may see. */
  #userBinds(
    isolated: boolean,
    bindable: (bind: Bind) => boolean,
  ): { userBinds: Bind[]; trustEnv: Record<string, string> } {
    const { spec } = this.#config;
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

    return { userBinds, trustEnv };
  }

  /** The sandbox's whole environment: the allowlist and what the view needs, nothing else. */
  #sandboxEnv(plan: ViewPlan, options: ExecOptions, extras: SpawnExtras): Record<string, string> {
    const { hostEnv, spec } = this.#config;
    const { setupBind, pathDirs, trustEnv, isolated, networked } = plan;
    // `npm install -g` (a --setup step) installs into the setup prefix, whose bin/ comes first on
    // PATH. No directory of the home is on any PATH: a state home is what earlier servers wrote.
    const setupBin = setupBind.length > 0 ? [`${SETUP_PREFIX}/bin`] : [];
    const env: Record<string, string> = {
      PATH: sandboxPath([...setupBin, ...pathDirs], hostEnv.PATH, this.#roots),
      HOME: this.#insideHome,
      TMPDIR: SANDBOX_TMP,
      LANG: hostEnv.LANG || 'C.UTF-8',
      ...trustEnv,
      ...(extras.setup ? { NPM_CONFIG_PREFIX: SETUP_PREFIX } : {}),
      ...(isolated ? {} : spec.env),
      ...options.env,
    };
    if (networked) Object.assign(env, proxyEnv(SANDBOX_PROXY_PORT));

    return env;
  }

  /** Namespaces, the read-only system, the home, /tmp and every bind. */
  #bwrapArgs(plan: ViewPlan, extras: SpawnExtras, staged: string[]): string[] {
    const nextStage = () => join(this.#root, 'binds', String(this.#staged++));
    // Mount targets missing from the system get a place to be made (see systemView).
    const view = systemView(
      plan.userBinds.map((bind) => bind.dest),
      this.#roots,
    );
    const home = plan.install ? undefined : extras.setup && this.#setup ? this.#setup.home : this.#home;
    return namespaceArgs({
      layered: plan.layered,
      view,
      roots: this.#roots,
      shmSize: this.#config.shmSize,
      tmpSize: this.#config.tmpSize,
      insideHome: this.#insideHome,
      home,
      binds: [...plan.binds, ...plan.mounted],
      userBinds: plan.userBinds,
      bindArgs: bindArgsFor(this.#config.info, nextStage, staged),
    });
  }

  /** The host end of the sandbox's network: proxy, DNS and relay (network.ts). */
  #network(grants: readonly NetGrant[], extras: SpawnExtras): SandboxNetwork {
    const { spec } = this.#config;
    // An install step's own observer sees the proxy's decisions too.
    const installObserver = extras.onEvent;
    const onEvent = installObserver
      ? (event: SandboxEvent) => {
          spec.onEvent?.(event);
          installObserver(event);
        }
      : spec.onEvent;
    const egress = this.#egressState();
    return new SandboxNetwork({
      grants,
      names: egress.names,
      reporter: egress.reporter,
      proxyPort: SANDBOX_PROXY_PORT,
      logger: this.#config.logger,
      ...(onEvent ? { onEvent } : {}),
      ...(this.#config.resolve ? { resolve: this.#config.resolve } : {}),
      ...(this.#config.dial ? { dial: this.#config.dial } : {}),
    });
  }

  /** The started bwrap as a process: its filter, its namespace's init, its network and its end. */
  async #watch(child: ChildProcess, network: SandboxNetwork | undefined): Promise<SpawnedProcess> {
    const seccompPipe = child.stdio[SECCOMP_FD] as NodeJS.WritableStream;
    seccompPipe.on('error', () => {});
    seccompPipe.end(Buffer.from(this.#seccomp));

    const nsInit = readInfoPid(child.stdio[INFO_FD] as NodeJS.ReadableStream);
    const init = nsInit.then((pid) => (pid === undefined ? undefined : identifyInit(pid)));
    this.#inits.push(init);
    const proc = adaptChild(child, { signal: namespaceSignal(child, nsInit, init) });

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
