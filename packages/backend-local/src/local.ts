import type { ChildProcess, StdioOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chownSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import {
  armTtl,
  type ExecOptions,
  killAll,
  type PrepareOptions,
  type Sandbox,
  type SandboxBackend,
  type SandboxEvent,
  SandboxFailureError,
  type SandboxSpec,
  SPECIFICATION_VERSION,
} from '@mcpsandbox/core';
import { DenialReporter, type NetGrant, SyntheticNames } from '@mcpsandbox/egress';
import {
  type Bind,
  endNamespace,
  hiddenRoots,
  identifyInit,
  isUvxCommand,
  type NamespaceInit,
  openState,
  parseNpxCommand,
  registryAccess,
  SANDBOX_HOME,
  type StateDirs,
} from '@mcpsandbox/host-side';
import { adaptChild, type SpawnedProcess } from './child-process.js';
import { buildSeccompFilter } from './filter/build.js';
import type { PackageCopy } from './install/prepare.js';
import { makeSetupDirs, SETUP_PREFIX, type SetupDirs } from './install/setup-dirs.js';
import type { LocalBackendOptions } from './options.js';
import type { LocalHostInfo } from './probe.js';
import { outerBwrapArgs, relaySource, SandboxNetwork, writeResolverFiles } from './relay/network.js';
import { resolverArgs } from './relay/resolver-args.js';
import { backendSettings, type SandboxConfig, type SpawnExtras, sandboxConfig } from './session/config.js';
import { stageCopies } from './session/copies.js';
import { launcherArgv } from './session/launcher.js';
import { probeOnce } from './session/probe-once.js';
import { proxyEnv, readInfoPid } from './session/process-helpers.js';
import { type SecretSession, startSecretSession } from './session/secrets.js';
import { lookInsideTarget, startBwrap } from './session/start-bwrap.js';
import { makeSandboxRoot, removeStateDir, sweepAbandoned } from './session/state-dir.js';
import { namespaceSignal } from './teardown/signal.js';
import { bindArgsFor } from './view/bind-args.js';
import { namespaceArgs } from './view/namespace-args.js';
import { planView, type ViewPlan } from './view/plan.js';
import { SANDBOX_TMP, sandboxPath, systemView } from './view/system-view.js';

/** The loopback port inside the sandbox where its granted egress proxy listens. */
export const SANDBOX_PROXY_PORT = 3128;

export type { LocalBackendOptions } from './options.js';
export { DEFAULT_MAX_PROCESSES } from './settings.js';

/**
 * The `local` backend: each process runs under bubblewrap in fresh user, mount, pid, ipc, uts
 * and network namespaces, with a read-only view of the system, a private home and tmp, a
 * seccomp filter and no network unless granted. Construction does no I/O; the first `create`
 * probes the machine and fails with a typed error naming the fix when the sandbox cannot work.
 */
export function createLocalBackend(options: LocalBackendOptions = {}): SandboxBackend {
  const backend = backendSettings(options);
  const { trustNote } = backend;
  let info: LocalHostInfo | undefined;
  const machine = probeOnce(options, backend.hostEnv, backend.logger, (result) => {
    info = result;
  });
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'local',
    isolation: 'os',
    substitutesSecrets: true,
    describe: () =>
      info
        ? `bubblewrap${info.bwrapVersion ? ` ${info.bwrapVersion}` : ''}: user, mount, pid, ipc, uts and network namespaces, seccomp, ` +
          `read-only system, private home and tmp${info.runAs ? `, as uid ${info.runAs.uid}` : ''}${trustNote}`
        : `bubblewrap OS sandbox (namespaces, seccomp, read-only system)${trustNote}`,
    async create(spec, createOptions) {
      // The binary may have started this very sandbox already (early.ts): take it if so.
      const early = await options.takeEarlyStart?.()?.adopt(options, spec);
      if (early) return early;
      const found = await machine.info();
      createOptions?.signal?.throwIfAborted();
      const sandbox = new LocalSandbox({ ...sandboxConfig(spec, found, options, backend), machine });
      try {
        await sandbox.stageCopies();
        await sandbox.startSecrets();
      } catch (error) {
        await sandbox.close();
        throw error;
      }
      return sandbox;
    },
  };
}

interface EgressState {
  readonly names: SyntheticNames;
  readonly reporter: DenialReporter;
  readonly files: ReturnType<typeof writeResolverFiles>;
}

/** bwrap's info pipe (the namespace's init pid) and the pipe its seccomp filter is read from. */
const INFO_FD = 3;
const SECCOMP_FD = 4;

interface Live {
  readonly proc: SpawnedProcess;
  readonly done: Promise<void>;
}

/** What an early start (early.ts) needs of a sandbox beyond the contract. */
export interface LocalSandboxHandle {
  /** At exit or on a signal, when nothing can be awaited: kills what runs, removes the directory. */
  abandonNow(): void;
  /** The hard lifetime counted again from now, with `spec`'s TTL: once the program takes it. */
  restartTtl(spec: Pick<SandboxSpec, 'ttlMs' | 'onEvent'>): void;
}

class LocalSandbox implements Sandbox, LocalSandboxHandle {
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
  #disarmTtl: () => void;
  readonly #seccomp: Uint8Array;
  /** The server's package copy its start makes first (install/prepare.ts), once. */
  #copyAtStart: PackageCopy | undefined;
  /** Binds added by prepare() (the installed package), for every later exec. */
  readonly #extraBinds: Bind[] = [];
  /** Host copies of `copy` mounts, by their index in the spec. */
  readonly #copies = new Map<number, string>();
  readonly #state: StateDirs | undefined;
  /** Own-file paths already announced, so that each is said once. */
  readonly #shown = new Set<string>();
  #staged = 0;
  /** Setup steps' own prefix and home (see #setupDirs); undefined until the first setup step. */
  #setup: SetupDirs | undefined;
  /** Set by the first exec that is not a setup step: later setup steps are refused. */
  #serverStarted = false;
  /** Egress state shared by every exec: one synthetic address per name, one hint per name. */
  #egress: EgressState | undefined;
  #closing: Promise<void> | undefined;
  /** `--secret`: the session CA and the trust files (session/secrets.ts); undefined without one. */
  #secrets: SecretSession | undefined;

  constructor(config: SandboxConfig) {
    this.#config = config;
    this.#roots = hiddenRoots(config.hostHome);
    this.#insideHome = this.#roots.includes('/home') ? SANDBOX_HOME : '/run/sandbox-home';
    this.#seccomp = buildSeccompFilter(config.info.arch);
    sweepAbandoned(config.stateDir);
    const runAs = config.info.runAs;
    const { root, rootId } = makeSandboxRoot(config.stateDir, runAs);
    this.#root = root;
    this.#rootId = rootId;
    this.#state = config.state ? openState(config.state.root, config.state.name, runAs) : undefined;
    if (this.#state) this.#home = this.#state.home;
    else {
      this.#home = join(this.#root, 'home');
      mkdirSync(this.#home, { mode: 0o700 });
      if (runAs) chownSync(this.#home, runAs.uid, runAs.gid);
    }
    this.#disarmTtl = armTtl(config.spec, () => void this.close());
  }

  /** `copy` mounts: a private copy of each (see session/copies.ts). */
  stageCopies(): Promise<void> {
    return stageCopies(this.#root, this.#config.spec, this.#config.info, this.#copies);
  }

  /** Only a spec that binds a secret loads the CA's code and makes one. */
  async startSecrets(): Promise<void> {
    const secrets = this.#config.spec.network?.secrets ?? [];
    if (secrets.length === 0) return;
    const { hostEnv, tlsTrust } = this.#config;
    this.#secrets = await startSecretSession(
      secrets,
      this.#root,
      hostEnv,
      tlsTrust !== undefined,
      this.#config.secretUpstreamCa,
    );
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

  /** The setup steps' own directories, made on the first step (see install/setup-dirs.ts). */
  #setupDirs(): SetupDirs {
    this.#setup ??= makeSetupDirs(this.#root, this.#config.info.runAs, {
      persistent: this.#state !== undefined,
      home: this.#home,
    });
    return this.#setup;
  }

  /** The npx install step (see install/prepare.ts). */
  async prepare(command: readonly string[], options: PrepareOptions): Promise<readonly string[]> {
    this.#assertOpen();
    // Only an `npx -y` or `uvx` start has an install step: its code loads with it, not with every start.
    if (!parseNpxCommand(command) && !isUvxCommand(command)) return command;
    const { prepareCommand } = await import('./install/prepare.js');
    return prepareCommand(
      {
        config: this.#config,
        root: this.#root,
        state: this.#state,
        extraBinds: this.#extraBinds,
        copyAtStart: (copy) => {
          this.#copyAtStart = copy;
        },
        spawn: (requested, execOptions, extras) => this.spawn(requested, execOptions, extras),
      },
      command,
      options,
    );
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
    // The first exec that is neither an install nor a setup step is the server's.
    const copy = extras.install || extras.setup ? undefined : this.#copyAtStart;
    if (copy) this.#copyAtStart = undefined;
    args.push('--', ...launcherArgv(this.#config, target, copy, extras.install === true));
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
    // Until a sandbox has started on this machine, this one is its trial (session/probe-once.ts):
    // when bwrap cannot be run, or ends before starting its child, the probe says why.
    const machine = this.#config.machine?.verified() === false ? this.#config.machine : undefined;
    let child: ChildProcess;
    try {
      child = await startBwrap(info, bwrapArgv, staged, env, stdio);
    } catch (error) {
      await machine?.diagnose();
      throw error;
    }
    const { proc, nsInit } = this.#watch(child, network);
    if (machine) {
      if ((await nsInit) === undefined) await machine.diagnose();
      else machine.started();
    }
    // close() may have begun while bwrap was starting: it did not see this process, so end it here.
    if (this.#closing) await proc.kill('SIGKILL');
    return proc;
  }

  /** Host trees a sandbox can write: `rw` mounts, the state root, this session's directory. */
  #writableTrees(): string[] {
    const rw = (this.#config.spec.mounts ?? []).filter((m) => m.mode === 'rw').map((m) => m.hostPath);
    return [...rw, ...(this.#config.state ? [this.#config.state.root] : []), this.#root];
  }

  /** What the command needs to start, and what of the host it sees (see view/plan.ts). */
  #planView(requested: readonly string[], options: ExecOptions, extras: SpawnExtras): ViewPlan {
    const context = {
      config: this.#config,
      roots: this.#roots,
      setup: this.#setup,
      extraBinds: this.#extraBinds,
      copies: this.#copies,
      shown: this.#shown,
      writableTrees: this.#writableTrees(),
      ...(this.#secrets ? { secretTrust: this.#secrets } : {}),
    };
    return planView(context, requested, options, extras);
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
      // Install and setup steps reach the registry: no secret is substituted for them.
      ...(this.#secrets && !extras.install && !extras.setup ? { secrets: this.#secrets.routing } : {}),
    });
  }

  /** The started bwrap as a process: its filter, its namespace's init, its network and its end. */
  #watch(
    child: ChildProcess,
    network: SandboxNetwork | undefined,
  ): { readonly proc: SpawnedProcess; readonly nsInit: Promise<number | undefined> } {
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
    return { proc, nsInit };
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

  restartTtl(spec: Pick<SandboxSpec, 'ttlMs' | 'onEvent'>): void {
    this.#disarmTtl();
    this.#disarmTtl = armTtl(spec, () => void this.close());
  }

  abandonNow(): void {
    for (const { proc } of this.#live) {
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // bwrap dies with this process; a directory still in use is left to a later start's sweep.
    removeStateDir(this.#config.stateDir, basename(this.#root), this.#rootId);
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
