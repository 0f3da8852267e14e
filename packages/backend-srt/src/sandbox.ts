import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import {
  adaptChildProcess,
  armTtl,
  type ChildSandboxProcess,
  defaultPinLockFile,
  type ExecOptions,
  type KillSignal,
  type Logger,
  type PrepareOptions,
  pinNpxPackage,
  type Sandbox,
  type SandboxEvent,
  SandboxFailureError,
  type SandboxSpec,
} from '@mcpsandbox/core';
import { type NetGrant, parseGrant, type SecretRouting } from '@mcpsandbox/egress';
import type { SecretTrust } from '@mcpsandbox/egress/secrets';
import {
  type Bind,
  commandBinds,
  endNamespace,
  isInside,
  locateCommand,
  type NamespaceInit,
  type NpxCacheOptions,
  ownFiles,
  prepareNpx,
  prepareUvx,
  type StateDirs,
  uvCacheRoot,
} from '@mcpsandbox/host-side';
import type { SrtEngine } from './engine.js';
import { launch } from './launch.js';
import { packageCopy } from './package-copy.js';
import { userDataRoots } from './policy.js';
import { commandTree, descendants, findNamespaceInit, signalAll } from './process-tree.js';
import { sessionFilesystem } from './profile.js';
import { markOwner, sweepDead } from './sweep.js';

/** Each session's own directory in the state dir: swept by a later start once its owner is gone. */
export const SESSION_PREFIX = 'mcp-sandbox-srt-';

export interface SrtSandboxConfig {
  readonly spec: SandboxSpec;
  readonly engine: SrtEngine;
  readonly grants: readonly NetGrant[];
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  readonly hostHome: string;
  readonly stateDir: string;
  readonly state?: StateDirs;
  readonly autoMount: boolean;
  readonly npm: NpxCacheOptions;
  /** TLS trust variables that cross, and the files they name (read-only). */
  readonly trust: { readonly env: Readonly<Record<string, string>>; readonly files: readonly string[] };
  /** `--secret`: the host's trust (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE) is merged into the session CA's files. */
  readonly forwardsHostTrust: boolean;
  /** Tests: trust for bound hosts' certificates under `--secret` (else this process's default trust). */
  readonly secretUpstreamCa?: string;
  readonly logger: Logger;
}

interface Spawn {
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly grants: readonly NetGrant[];
  readonly readOnly: readonly string[];
  readonly readWrite: readonly string[];
  /** The home this process gets (a throwaway one for an install step). */
  readonly home: string;
  readonly cwd?: string;
  readonly onEvent?: (event: SandboxEvent) => void;
  /** `--secret`: the server's processes only (never an install, copy or setup step). */
  readonly secrets?: SecretRouting;
}

interface Live {
  readonly proc: ChildSandboxProcess;
  readonly init: Promise<NamespaceInit | undefined>;
}

/**
 * One session on srt: a private home and tmp on the host (or the `--state` home), every process
 * wrapped by srt with this session's filesystem plan, the environment exactly the allowlist, and
 * egress only through the host-side proxy with this session's grants.
 */
export class SrtSandbox implements Sandbox {
  readonly id = `srt-${randomUUID()}`;
  readonly #config: SrtSandboxConfig;
  readonly #owner = Symbol('srt session');
  readonly #root: string;
  readonly #home: string;
  readonly #tmp: string;
  readonly #live = new Set<Live>();
  readonly #disarmTtl: () => void;
  /** The server's installed package, read-only for every later exec. */
  readonly #installed: string[] = [];
  /** Paths the prepared command names inside, mapped to where they are on the host. */
  readonly #translate: Bind[] = [];
  /**
   * The server's writable package copies, read-write for every later exec. The sandbox chooses
   * what is in them: the host resolves, stats and reads no path inside (see {@link #spawn}).
   */
  readonly #writable: string[] = [];
  #grantsInUse: { readonly grants: readonly NetGrant[]; readonly secrets: boolean } | undefined;
  /** `--secret`: the session CA and its trust files; undefined without one. */
  #secrets: SecretTrust | undefined;
  #closing: Promise<void> | undefined;

  constructor(config: SrtSandboxConfig) {
    this.#config = config;
    // What sessions of killed bridges left here goes first.
    sweepDead(config.stateDir, SESSION_PREFIX);
    // realpath: srt compares resolved paths (macOS's /var is /private/var).
    this.#root = realpathSync(mkdtempSync(join(config.stateDir, SESSION_PREFIX)));
    const { runAs } = config.engine;
    // As root the sandbox's user passes through the root (0711) to its own home and tmp.
    if (runAs) chmodSync(this.#root, 0o711);
    markOwner(this.#root);
    this.#home = config.state?.home ?? join(this.#root, 'home');
    this.#tmp = join(this.#root, 'tmp');
    mkdirSync(this.#home, { recursive: true, mode: 0o700 });
    mkdirSync(this.#tmp, { mode: 0o700 });
    if (runAs && !config.state) chownSync(this.#home, runAs.uid, runAs.gid);
    if (runAs) chownSync(this.#tmp, runAs.uid, runAs.gid);
    // Holding the switch now: a second session in this process fails at create, not mid-way.
    config.engine.egress.hold(this.#owner, this.#policy(config.grants, config.spec.onEvent));
    this.#disarmTtl = armTtl(config.spec, () => void this.close());
  }

  #policy(
    grants: readonly NetGrant[],
    onEvent: ((event: SandboxEvent) => void) | undefined,
    secrets?: SecretRouting,
  ) {
    return {
      grants,
      logger: this.#config.logger,
      ...(onEvent ? { onEvent } : {}),
      ...(secrets ? { secrets } : {}),
    };
  }

  /**
   * Only a spec that binds a secret loads the CA's code and makes one: its trust files go in a
   * directory of this session's root, which the sandbox cannot write, shown read-only to the
   * server's processes in place (srt shows host paths where they are).
   */
  async startSecrets(): Promise<void> {
    const secrets = this.#config.spec.network?.secrets ?? [];
    if (secrets.length === 0) return;
    const { writeSecretTrust } = await import('@mcpsandbox/egress/secrets');
    const { hostEnv, forwardsHostTrust, secretUpstreamCa } = this.#config;
    this.#secrets = await writeSecretTrust({
      secrets,
      dir: join(this.#root, 'trust'),
      hostEnv,
      forwardsHostTrust,
      ...(secretUpstreamCa ? { upstreamCa: secretUpstreamCa } : {}),
    });
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<ChildSandboxProcess> {
    const { spec } = this.#config;
    const own =
      this.#config.autoMount && options.purpose !== 'setup'
        ? ownFiles(command, process.cwd(), this.#roots(), this.#config.hostHome, this.#writable)
        : undefined;
    for (const bind of own?.binds ?? []) {
      this.#config.logger.info(
        `showing ${bind.source} read-only at the same path: the server's own files (--no-auto-mount turns this off)`,
      );
      spec.onEvent?.({ type: 'auto-mount', path: bind.source });
    }
    const grants = options.network ? options.network.allow.map(parseGrant) : this.#config.grants;
    const mounts = options.purpose === 'setup' ? [] : (spec.mounts ?? []);
    // The session CA is the server's: a setup step, or a process with grants of its own, gets none of it.
    const secrets = options.purpose !== 'setup' && !options.network ? this.#secrets : undefined;
    return this.#spawn({
      command: this.#translated(own?.command ?? command),
      env: {
        ...this.#config.trust.env,
        ...secrets?.envAt(secrets.dir),
        ...(options.purpose === 'setup' ? {} : spec.env),
        ...options.env,
      },
      grants,
      ...(secrets ? { secrets: secrets.routing } : {}),
      readOnly: [
        ...(secrets ? [secrets.dir] : []),
        ...this.#installed,
        ...(own?.binds ?? []).map((bind) => bind.source),
        ...mounts.filter((m) => m.mode === 'ro').map((m) => m.hostPath),
      ],
      readWrite: [...this.#writable, ...mounts.filter((m) => m.mode === 'rw').map((m) => m.hostPath)],
      home: this.#home,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
  }

  /**
   * `npx -y pkg`: the shared install step (registry only, pinned), run here in a throwaway home
   * with its own install prefix as the one writable path. srt shows paths in place, so the
   * step's and the command's inside paths are turned into the host paths they stand for. The
   * server then runs from a writable copy of its package (see package-copy.ts).
   */
  async prepare(command: readonly string[], options: PrepareOptions): Promise<readonly string[]> {
    this.#assertOpen();
    const { hostEnv, hostHome, logger, spec } = this.#config;
    const install = (
      argv: readonly string[],
      binds: readonly Bind[],
      network: { readonly allow: readonly string[] },
      env: Readonly<Record<string, string>>,
      onEvent: (event: SandboxEvent) => void,
    ) =>
      this.#step({
        command: translate(argv, binds),
        env,
        grants: network.allow.map(parseGrant),
        readOnly: binds.filter((b) => b.mode === 'ro').map((b) => b.source),
        readWrite: binds.filter((b) => b.mode === 'rw').map((b) => b.source),
        onEvent,
      });
    // uvx: the environment is made at its host path (srt shows paths in place), so its scripts'
    // `#!` lines name the path the server later runs them from.
    const uvx = await prepareUvx(command, options, {
      // uv reads the host's CA trust from SSL_CERT_FILE/SSL_CERT_DIR, as the server would.
      cache: {
        ...this.#config.npm,
        installEnv: { ...this.#config.trust.env, ...this.#config.npm.installEnv },
      },
      runAs: this.#config.engine.runAs,
      onEvent: spec.onEvent,
      logger,
      uvCacheRoot: uvCacheRoot(this.#config.npm.cacheRoot),
      lockFile: defaultPinLockFile(hostEnv, hostHome),
      install,
    });
    if (uvx) {
      for (const bind of uvx.binds) if (bind.dest !== bind.source) this.#translate.push(bind);
      this.#installed.push(...uvx.binds.map((bind) => bind.source));
      return this.#translated(uvx.command);
    }
    const result = await prepareNpx(command, options, {
      cache: this.#config.npm,
      runAs: this.#config.engine.runAs,
      onEvent: spec.onEvent,
      logger,
      pin: (pkg, registry, trust) =>
        pinNpxPackage(pkg, { registry, trust, lockFile: defaultPinLockFile(hostEnv, hostHome), logger }),
      install,
    });
    if (!result.bind) return result.command;
    this.#installed.push(result.bind.source);
    const name = result.package && packageNameIn(result.package.dir, result.bind.dest);
    if (!result.package || name === undefined) {
      this.#translate.push(result.bind);
      return this.#translated(result.command);
    }
    const copy = await packageCopy({
      install: result.bind,
      name,
      key: result.package.key,
      sessionRoot: this.#root,
      state: this.#config.state,
      runAs: this.#config.engine.runAs,
      // No network, no environment, no mounts: the install read-only, the copy writable.
      step: (argv, readOnly, readWrite) =>
        this.#step({ command: argv, env: {}, grants: [], readOnly, readWrite }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    this.#writable.push(copy.dir);
    this.#translate.push(copy.bind);
    spec.onEvent?.({
      type: 'writable-package',
      dir: this.#translated([result.package.dir])[0] as string,
      persistent: copy.persistent,
    });
    return this.#translated(result.command);
  }

  /** A setup step (install, copy) in a throwaway home, removed when it exits. */
  async #step(plan: Omit<Spawn, 'home'>): Promise<ChildSandboxProcess> {
    const home = mkdtempSync(join(this.#root, 'step-'));
    const { runAs } = this.#config.engine;
    if (runAs) chownSync(home, runAs.uid, runAs.gid);
    const proc = await this.#spawn({ ...plan, home });
    void proc.exit.then(() => rmSync(home, { recursive: true, force: true }));
    return proc;
  }

  #translated(command: readonly string[]): string[] {
    return translate(command, this.#translate);
  }

  #roots(): string[] {
    return userDataRoots(this.#config.engine.platform, this.#config.hostHome, this.#config.stateDir);
  }

  async #spawn(plan: Spawn): Promise<ChildSandboxProcess> {
    this.#assertOpen();
    const { engine, hostEnv, logger } = this.#config;
    const [name, ...args] = plan.command;
    if (name === undefined) throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
    const cwd = plan.cwd ?? plan.home;
    // A command in a package copy is the sandbox's to choose: the host neither stats nor
    // resolves it (its links could name any host file), and binds nothing for it.
    const written = name.includes('/') && this.#writable.some((dir) => isInside(resolve(cwd, name), dir));
    const found = written ? resolve(cwd, name) : locateCommand(name, hostEnv.PATH, cwd);
    if (found === undefined)
      throw new SandboxFailureError(`command not found: ${name}`, { code: 'E_COMMAND_NOT_FOUND' });
    const roots = this.#roots();
    // The runtime the command needs: the command, its interpreter, our own node (for `#!/usr/bin/env node`).
    const runtime = [
      ...(written ? [] : commandBinds(found, roots).binds),
      ...commandBinds(process.execPath, roots).binds,
    ].map((bind) => bind.source);
    this.#checkEngineUnwritable(plan.readWrite);
    const filesystem = sessionFilesystem({
      platform: engine.platform,
      hostHome: this.#config.hostHome,
      home: plan.home,
      tmp: this.#tmp,
      stateDir: this.#config.stateDir,
      runtime,
      engine,
      trustFiles: this.#config.trust.files,
      readOnly: plan.readOnly,
      readWrite: plan.readWrite,
    });
    const env = sessionEnv(plan, this.#tmp, hostEnv, engine.insideProxyPort);
    this.#useGrants(plan.grants, plan.onEvent, plan.secrets);
    const child = await launch([found, ...args], env, {
      platform: engine.platform,
      filesystem,
      cwd,
      hostPath: hostEnv.PATH ?? '/usr/bin:/bin',
      ...(engine.setpriv ? { setpriv: engine.setpriv } : {}),
    });
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    const pid = child.pid as number;
    const init = findNamespaceInit(pid, () => !exited);
    let nsInit: NamespaceInit | undefined;
    void init.then((found) => {
      nsInit = found;
    });
    const signal = (sig: KillSignal) => {
      if (sig === 'SIGKILL') {
        // The group and every descendant (one that left the group, on macOS); on Linux the
        // namespace's init too, which takes everything inside with it.
        signalAll([-pid, ...descendants(pid)], 'SIGKILL');
        void init.then((found) => found && endNamespace(found));
        return;
      }
      // SIGTERM is for the command, not for srt's launchers: what runs below the namespace's
      // init (Linux), or below the launcher (macOS, where the launchers pass it on by exec).
      if (nsInit) signalAll(commandTree(nsInit.pid), sig);
      else if (process.platform === 'linux')
        void init.then((found) => found && signalAll(commandTree(found.pid), sig));
      else signalAll([-pid, ...descendants(pid)], sig);
    };
    const proc = adaptChildProcess(child, { signal });
    const live: Live = { proc, init };
    this.#live.add(live);
    void proc.exit.then(() => {
      this.#live.delete(live);
      if (this.#live.size === 0) this.#grantsInUse = undefined;
    });
    if (this.#closing) await proc.kill('SIGKILL');
    logger.debug(`srt: started ${found}`);
    return proc;
  }

  /** One proxy policy at a time: an exec with other grants waits for none, it is refused. */
  #useGrants(
    grants: readonly NetGrant[],
    onEvent: ((event: SandboxEvent) => void) | undefined,
    secrets: SecretRouting | undefined,
  ): void {
    const wanted = { grants, secrets: secrets !== undefined };
    const same = (a: typeof wanted, b: typeof wanted) => JSON.stringify(a) === JSON.stringify(b);
    // A process without the substitution beside one with it would switch it off under the other.
    if (this.#grantsInUse && this.#live.size > 0 && !same(this.#grantsInUse, wanted)) {
      throw new SandboxFailureError(
        'the srt backend cannot run two processes with different network grants at once in one session',
        { code: 'E_SRT_BUSY' },
      );
    }
    this.#grantsInUse = wanted;
    const { spec } = this.#config;
    const both = onEvent
      ? (event: SandboxEvent) => {
          spec.onEvent?.(event);
          onEvent(event);
        }
      : spec.onEvent;
    this.#config.engine.egress.hold(this.#owner, this.#policy(grants, both, secrets));
  }

  /** srt (or the bwrap shim) rewritten by the sandbox would be run by the host at the next wrap. */
  #checkEngineUnwritable(writable: readonly string[]): void {
    for (const dir of this.#config.engine.hostCodeDirs) {
      for (const path of writable) {
        if (isInside(dir, path) || isInside(realOrSelf(dir), realOrSelf(path))) {
          throw new SandboxFailureError(
            `cannot mount ${path} read-write: it holds the sandbox runtime itself (${dir}), which the sandbox could then rewrite; mount it read-only`,
            { code: 'E_SRT_WRITABLE_ENGINE' },
          );
        }
      }
    }
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
      live.map(async ({ proc, init }) => {
        await proc.kill('SIGKILL');
        const found = await init;
        const left = found ? await endNamespace(found) : [];
        if (left.length > 0)
          this.#config.logger.warn(
            `sandbox ${this.id}: killed ${left.length} process(es) left after its init`,
          );
        await proc.exit;
      }),
    );
    this.#config.engine.egress.release(this.#owner);
    this.#config.state?.release();
    rmSync(this.#root, { recursive: true, force: true });
  }
}

/** The whole environment of a command in the sandbox: nothing of the host's but LANG. */
function sessionEnv(
  plan: Spawn,
  tmp: string,
  hostEnv: Readonly<Record<string, string | undefined>>,
  proxyPort: number,
): Record<string, string> {
  const proxy = `http://127.0.0.1:${proxyPort}`;
  const env: Record<string, string> = {
    PATH: [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin'].join(':'),
    HOME: plan.home,
    TMPDIR: tmp,
    LANG: hostEnv.LANG || 'C.UTF-8',
    // Always through the proxy, granted or not: a refused host is reported with its hint. No
    // NO_PROXY: the sandbox's loopback holds nothing but srt's bridge, and a grant of the host's
    // 127.0.0.1:port goes through the proxy like any other.
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    NODE_USE_ENV_PROXY: '1',
    ...plan.env,
  };
  return env;
}

/** Inside paths (a bind's dest) to the host paths they stand for (its source). */
export function translate(argv: readonly string[], binds: readonly Bind[]): string[] {
  return argv.map((arg) => {
    for (const bind of binds) {
      if (bind.dest === bind.source) continue;
      if (arg === bind.dest) return bind.source;
      if (arg.startsWith(`${bind.dest}/`)) return bind.source + arg.slice(bind.dest.length);
    }
    return arg;
  });
}

/** Scoped or plain npm package names: what the npx step validated, checked again at this edge. */
const PACKAGE_NAME = /^(@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/;

/** The package name in `<install>/node_modules/<name>`, when it is one. */
function packageNameIn(dir: string, install: string): string | undefined {
  const prefix = `${install}/node_modules/`;
  if (!dir.startsWith(prefix)) return undefined;
  const name = dir.slice(prefix.length);
  return PACKAGE_NAME.test(name) ? name : undefined;
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
