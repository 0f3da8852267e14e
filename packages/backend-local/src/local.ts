import type { ChildProcess, StdioOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { chmod, readdir, rm } from 'node:fs/promises';
import type { Server as NetServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import {
  armTtl,
  type BackendFactoryOptions,
  COPY_LIMITS,
  type ExecOptions,
  type KillSignal,
  type Logger,
  type MountSpec,
  type PrepareOptions,
  type Sandbox,
  type SandboxBackend,
  SandboxFailureError,
  type SandboxSpec,
  SPECIFICATION_VERSION,
  silentLogger,
  UsageError,
} from '@mcpsandbox/core';
import { adaptChild, type SpawnedProcess, startChild } from './child-process.js';
import { copyIn } from './copy-in.js';
import { type NetGrant, parseGrant } from './grants.js';
import { type LimitPlan, planLimits } from './limits.js';
import { type NpxCacheOptions, prepareNpx } from './npx.js';
import { type LocalSandboxInfo, probeLocalSandbox } from './probe.js';
import { EgressProxy, type Resolver } from './proxy.js';
import { buildSeccompFilter } from './seccomp.js';
import {
  type Bind,
  commandBinds,
  dedupeBinds,
  hiddenRoots,
  isHidden,
  locateCommand,
  SANDBOX_HOME,
  SANDBOX_TMP,
  sandboxPath,
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
  /** Replaces the start-up probe (diagnostics and tests). */
  readonly probe?: () => Promise<LocalSandboxInfo>;
  /** Replaces DNS for the egress proxy (tests). */
  readonly resolve?: Resolver;
}

export const DEFAULT_MAX_PROCESSES = 256;

/**
 * The `local` backend: each process runs under bubblewrap in fresh user, mount, pid, ipc, uts
 * and network namespaces, with a read-only view of the system, a private home and tmp, a
 * seccomp filter and no network unless granted. Construction does no I/O; the first `create`
 * probes the machine and fails with a typed error naming the fix when the sandbox cannot work.
 */
export function createLocalBackend(options: LocalBackendOptions = {}): SandboxBackend {
  const logger = options.logger ?? silentLogger;
  const hostEnv = options.hostEnv ?? process.env;
  // `--backend-option key=value`: stateDir, npmCacheDir, npmRegistry, maxProcesses.
  const settings = options.settings ?? {};
  const settingNumber = (key: string): number | undefined => {
    const value = settings[key];
    if (value === undefined) return undefined;
    const number = Number(value);
    if (!Number.isSafeInteger(number) || number <= 0) {
      throw new UsageError(`backend option ${key} must be a positive integer, not "${value}"`);
    }
    return number;
  };
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
          `read-only system, private home and tmp${info.runAs ? `, as uid ${info.runAs.uid}` : ''}`
        : 'bubblewrap OS sandbox (namespaces, seccomp, read-only system)',
    async create(spec, createOptions) {
      const found = await probe();
      createOptions?.signal?.throwIfAborted();
      const grants = parseGrants(spec.network?.allow);
      checkMounts(spec.mounts ?? [], hiddenRoots(hostEnv.HOME ?? homedir()));
      const limits = planLimits(spec.limits, {
        prlimit: found.prlimitPath !== undefined,
        defaultMaxProcesses:
          options.defaultMaxProcesses ?? settingNumber('maxProcesses') ?? DEFAULT_MAX_PROCESSES,
        hardLimits: readHardLimits(),
      });
      for (const note of limits.notes) logger.warn(note);
      spec.onEvent?.({ type: 'limits', enforced: limits.enforced, notEnforced: limits.notEnforced });
      const home = hostEnv.HOME ?? homedir();
      const npm: NpxCacheOptions = {
        cacheRoot:
          options.npmCacheDir ??
          settings.npmCacheDir ??
          defaultNpmCache(hostEnv, home, found.runAs !== undefined && !found.staging),
        hostEnv,
        ...((options.npmRegistry ?? settings.npmRegistry)
          ? { registry: options.npmRegistry ?? settings.npmRegistry }
          : {}),
      };
      const sandbox = new LocalSandbox({
        spec,
        info: found,
        grants,
        limits,
        hostEnv,
        hostHome: home,
        stateDir: options.stateDir ?? settings.stateDir ?? tmpdir(),
        npm,
        logger,
        ...(options.resolve ? { resolve: options.resolve } : {}),
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
 * Mount grants must name an existing host path and a place bwrap can create inside: an existing
 * path, or one under a hidden (empty, tmpfs) directory. The read-only system cannot grow new ones.
 */
export function checkMounts(mounts: readonly MountSpec[], roots: readonly string[]): void {
  for (const mount of mounts) {
    if (!isAbsolute(mount.hostPath) || !isAbsolute(mount.sandboxPath)) {
      throw new UsageError(`mount paths must be absolute: ${mount.hostPath} -> ${mount.sandboxPath}`);
    }
    if (!existsSync(mount.hostPath)) throw new UsageError(`mount source does not exist: ${mount.hostPath}`);
    if (!existsSync(mount.sandboxPath) && !isHidden(mount.sandboxPath, roots)) {
      throw new UsageError(
        `cannot mount at ${mount.sandboxPath}: it does not exist in the sandbox's read-only view of the system; ` +
          'choose an existing directory or a path under /tmp, /home, /mnt or /run',
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
  readonly npm: NpxCacheOptions;
  readonly logger: Logger;
  readonly resolve?: Resolver;
}

/** Internal extras for one exec: install steps bind their cache entry read-write. */
export interface SpawnExtras {
  readonly binds?: readonly Bind[];
}

interface Live {
  readonly proc: SpawnedProcess;
  readonly done: Promise<void>;
}

class LocalSandbox implements Sandbox {
  readonly id = `local-${randomUUID()}`;
  readonly #config: SandboxConfig;
  readonly #root: string;
  readonly #home: string;
  readonly #tmp: string;
  readonly #roots: string[];
  readonly #insideHome: string;
  readonly #live = new Set<Live>();
  readonly #disarmTtl: () => void;
  readonly #seccomp: Uint8Array;
  /** Binds added by prepare() (the installed package), for every later exec. */
  readonly #extraBinds: Bind[] = [];
  /** Host copies of `copy` mounts, by their index in the spec. */
  readonly #copies = new Map<number, string>();
  #staged = 0;
  #closing: Promise<void> | undefined;

  constructor(config: SandboxConfig) {
    this.#config = config;
    this.#roots = hiddenRoots(config.hostHome);
    this.#insideHome = this.#roots.includes('/home') ? SANDBOX_HOME : '/run/sandbox-home';
    this.#seccomp = buildSeccompFilter(config.info.arch);
    sweepAbandoned(config.stateDir);
    this.#root = mkdtempSync(join(config.stateDir, STATE_PREFIX));
    // Who owns this directory: a later sandbox removes it if that process died without close().
    writeFileSync(join(this.#root, OWNER_FILE), String(process.pid));
    this.#home = join(this.#root, 'home');
    this.#tmp = join(this.#root, 'tmp');
    mkdirSync(this.#home, { mode: 0o700 });
    mkdirSync(this.#tmp, { mode: 0o700 });
    chmodSync(this.#root, 0o700);
    const runAs = config.info.runAs;
    if (runAs) {
      for (const dir of [this.#root, this.#home, this.#tmp]) chownSync(dir, runAs.uid, runAs.gid);
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
    return this.spawn(command, options, {});
  }

  async prepare(command: readonly string[], options: PrepareOptions): Promise<readonly string[]> {
    this.#assertOpen();
    const result = await prepareNpx(command, options, {
      cache: this.#config.npm,
      runAs: this.#config.info.runAs,
      onEvent: this.#config.spec.onEvent,
      install: (argv, binds, network, env) => this.spawn(argv, { network, env }, { binds }),
    });
    if (result.bind) this.#extraBinds.push(result.bind);
    return result.command;
  }

  async spawn(
    command: readonly string[],
    options: ExecOptions,
    extras: SpawnExtras,
  ): Promise<SpawnedProcess> {
    this.#assertOpen();
    const [name] = command;
    if (name === undefined) throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
    const { hostEnv, info, spec } = this.#config;
    const grants = options.network ? parseGrants(options.network.allow) : this.#config.grants;
    const networked = grants.length > 0;

    // What to bind so that the command and node (the relay, `#!/usr/bin/env node`) can start.
    const binds: Bind[] = [];
    const pathDirs: string[] = [];
    const mounted = [...this.#extraBinds, ...(extras.binds ?? [])];
    const insideOnly = mounted.some((bind) => name.startsWith(`${bind.dest}/`));
    const found = insideOnly ? name : locateCommand(name, hostEnv.PATH, process.cwd());
    if (found === undefined) {
      throw new SandboxFailureError(`command not found: ${name}`, { code: 'E_COMMAND_NOT_FOUND' });
    }
    if (!insideOnly) {
      const planned = commandBinds(found, this.#roots);
      binds.push(...planned.binds);
      if (planned.pathDir) pathDirs.push(planned.pathDir);
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
    const userBinds: Bind[] = (spec.mounts ?? []).map((m, index): Bind => {
      if (m.mode !== 'copy') return { source: m.hostPath, dest: m.sandboxPath, mode: m.mode };
      // Never the original: a copy mount the host did not stage is an error, not a live bind.
      const copy = this.#copies.get(index);
      if (copy === undefined) throw new SandboxFailureError('copy mount not staged', { code: 'E_COPY' });
      return { source: copy, dest: m.sandboxPath, mode: 'rw' };
    });

    const env: Record<string, string> = {
      PATH: sandboxPath(pathDirs, hostEnv.PATH, this.#roots),
      HOME: this.#insideHome,
      TMPDIR: SANDBOX_TMP,
      LANG: hostEnv.LANG || 'C.UTF-8',
      ...spec.env,
      ...options.env,
    };
    if (networked) Object.assign(env, proxyEnv(SANDBOX_PROXY_PORT));

    const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'];
    const INFO_FD = 3;
    const SECCOMP_FD = 4;
    let ipcFd: number | undefined;
    if (networked) {
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

    const args = [
      '--unshare-user',
      '--unshare-ipc',
      '--unshare-pid',
      '--unshare-net',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
      '--hostname',
      'mcp-sandbox',
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
    ];
    const tmpfsRoots = this.#roots.filter((root) => root !== SANDBOX_TMP);
    for (const root of tmpfsRoots) args.push('--tmpfs', root);
    args.push('--bind', this.#home, this.#insideHome, '--bind', this.#tmp, SANDBOX_TMP);
    for (const bind of dedupeBinds([...binds, ...mounted])) args.push(...bindArgs(bind));
    for (const bind of userBinds) args.push(...bindArgs(bind));
    // The hidden roots stay empty and read-only: the private home and tmp are the only writable places.
    for (const root of tmpfsRoots) args.push('--remount-ro', root);
    args.push('--seccomp', String(SECCOMP_FD), '--info-fd', String(INFO_FD));
    if (options.cwd) args.push('--chdir', options.cwd);
    args.push('--', ...this.#launcher(command, ipcFd));

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
          info.bwrapPath,
          ...args,
        ],
        { env, stdio },
      );
    } else {
      child = await startChild(info.bwrapPath, args, {
        env,
        stdio,
        ...(info.runAs ? { uid: info.runAs.uid, gid: info.runAs.gid } : {}),
      });
    }
    const seccompPipe = child.stdio[SECCOMP_FD] as NodeJS.WritableStream;
    seccompPipe.on('error', () => {});
    seccompPipe.end(Buffer.from(this.#seccomp));

    const nsInit = readInfoPid(child.stdio[INFO_FD] as NodeJS.ReadableStream);
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    const signal = (sig: KillSignal) => {
      if (exited) return;
      if (sig === 'SIGKILL') {
        // bwrap's init dies with bwrap (--die-with-parent), and the kernel then kills the
        // whole pid namespace: nothing started inside survives.
        tryKill(child.pid as number, 'SIGKILL');
        void nsInit.then((pid) => pid !== undefined && !exited && tryKill(-pid, 'SIGKILL'));
        return;
      }
      // The sandbox's session: its init ignores SIGTERM from outside, the command gets it.
      void nsInit.then((pid) => {
        if (pid !== undefined && !exited) tryKill(-pid, sig);
      });
    };
    const proc = adaptChild(child, { signal });

    let proxy: EgressProxy | undefined;
    if (networked) {
      proxy = new EgressProxy({
        grants,
        ...(spec.onEvent ? { onEvent: spec.onEvent } : {}),
        ...(this.#config.resolve ? { resolve: this.#config.resolve } : {}),
      });
      const activeProxy = proxy;
      child.once('message', (_message: unknown, handle: unknown) => {
        if (handle && typeof (handle as NetServer).on === 'function') activeProxy.attach(handle as NetServer);
        if (child.connected) child.disconnect();
      });
    }
    const live: Live = {
      proc,
      done: proc.exit.then(() => {
        proxy?.close();
        if (child.connected) child.disconnect();
        this.#live.delete(live);
      }),
    };
    this.#live.add(live);
    // close() may have begun while bwrap was starting: it did not see this process, so end it here.
    if (this.#closing) await proc.kill('SIGKILL');
    return proc;
  }

  /** The argv bwrap executes: limits, a clean environment and, with egress, the relay first. */
  #launcher(command: readonly string[], ipcFd: number | undefined): string[] {
    const { info, limits } = this.#config;
    const limited =
      info.prlimitPath && limits.prlimitArgs.length > 0
        ? [info.prlimitPath, ...limits.prlimitArgs, '--', ...command]
        : [...command];
    if (ipcFd === undefined) {
      // bwrap sets PWD; the environment is the allowlist and nothing else.
      return ['/bin/sh', '-c', 'unset PWD; exec "$@"', 'sh', ...limited];
    }
    // The relay runs before the command, with the user's NODE_OPTIONS cleared: nothing but it runs then.
    const script = `NODE_OPTIONS= "$0" -e "$1" || exit 125; unset PWD NODE_CHANNEL_FD NODE_CHANNEL_SERIALIZATION_MODE; exec ${ipcFd}>&-; shift; exec "$@"`;
    return ['/bin/sh', '-c', script, process.execPath, relaySource(SANDBOX_PROXY_PORT), ...limited];
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
    await Promise.all(
      live.map(async ({ proc, done }) => {
        await proc.kill('SIGKILL');
        await proc.exit;
        await done;
      }),
    );
    await removeTree(this.#root);
  }
}

/**
 * Runs inside the sandbox before the command, in its network namespace: opens the proxy's
 * listener on the sandbox's own loopback and hands the listening socket to the host over the
 * IPC channel. The host serves it from then on, so no process inside needs a unix socket.
 */
function relaySource(port: number): string {
  return `const s=require('net').createServer();s.on('error',e=>{console.error('mcp-sandbox relay: '+e.message);process.exit(1)});s.listen({host:'127.0.0.1',port:${port}},()=>process.send('listening',s,()=>process.exit(0)))`;
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

async function readInfoPid(stream: NodeJS.ReadableStream): Promise<number | undefined> {
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
  });
  try {
    await once(stream, 'end');
  } catch {
    return undefined;
  }
  const pid = /"child-pid"\s*:\s*(\d+)/.exec(text)?.[1];
  return pid === undefined ? undefined : Number(pid);
}

function tryKill(pid: number, signal: KillSignal): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
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

/** Removes private directories left by host processes that were killed before close(). */
function sweepAbandoned(stateDir: string): void {
  let entries: string[];
  try {
    entries = readdirSync(stateDir).filter((name) => name.startsWith(STATE_PREFIX));
  } catch {
    return;
  }
  for (const name of entries) {
    const dir = join(stateDir, name);
    let pid: number;
    try {
      pid = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
    } catch {
      continue;
    }
    if (!Number.isSafeInteger(pid) || pid <= 0 || isAlive(pid)) continue;
    void removeTree(dir);
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

/** Removes a sandbox's host directory even when the sandbox left read-only directories in it. */
async function removeTree(root: string): Promise<void> {
  try {
    await rm(root, { recursive: true, force: true });
    return;
  } catch {
    // fall through: make everything writable, then retry
  }
  const walk = async (dir: string): Promise<void> => {
    await chmod(dir, 0o700).catch(() => {});
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) if (entry.isDirectory()) await walk(join(dir, entry.name));
  };
  await walk(root);
  await rm(root, { recursive: true, force: true }).catch(() => {});
}
