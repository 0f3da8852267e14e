import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import {
  adaptChildProcess,
  armTtl,
  type ChildSandboxProcess,
  type ExecOptions,
  type KillSignal,
  type Logger,
  type Sandbox,
  SandboxFailureError,
  type SandboxSpec,
} from '@mcpsandbox/core';
import { type NetGrant, parseGrant } from '@mcpsandbox/egress';
import { commandBinds, locateCommand, ownFiles, type StateDirs } from '@mcpsandbox/host-side';
import { SeatbeltDenials, watchDenials } from '../log/watch.js';
import type { DylibClosure } from '../profile/dylib-closure.js';
import { generateProfile } from '../profile/generate.js';
import { SessionEgress } from './egress.js';
import { sandboxArgv, startSandboxed } from './launch.js';
import { psTable, sessionProcesses, signalAll } from './processes.js';
import { makeSessionRoot, type SessionRoot, writeOwner } from './session-root.js';

export interface SeatbeltSandboxConfig {
  readonly spec: SandboxSpec;
  readonly grants: readonly NetGrant[];
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  readonly hostHome: string;
  readonly stateDir: string;
  readonly state?: StateDirs;
  readonly autoMount: boolean;
  readonly trust: { readonly env: Readonly<Record<string, string>>; readonly files: readonly string[] };
  /** The sandbox-exec to run (a stand-in only in the lifecycle tests off macOS). */
  readonly sandboxExec: string;
  /** The runtime's dylib closure (otool on macOS). */
  readonly closure: (binary: string) => DylibClosure;
  /** Whether to read the unified log for denials (macOS). */
  readonly watchLog: boolean;
  readonly logger: Logger;
}

/** Roots whose files an own-files auto-mount may show (the host's data, hidden by default). */
const DATA_ROOTS = ['/Users', '/Volumes', '/private', '/opt', '/usr/local', '/Library', '/nix'];

/**
 * One session on Seatbelt: a private home and tmp (or the `--state` home), every process under
 * `sandbox-exec` with a profile generated from this session's plan, the environment exactly the
 * allowlist, egress only through this session's proxy. Each session is independent: `serve` runs
 * as many as it has clients.
 */
export class SeatbeltSandbox implements Sandbox {
  readonly id = `seatbelt-${randomUUID()}`;
  readonly #config: SeatbeltSandboxConfig;
  readonly #root: SessionRoot;
  readonly #egress: SessionEgress;
  readonly #tag = this.id.replace(/[^A-Za-z0-9_-]/g, '');
  readonly #groups = new Set<number>();
  readonly #live = new Set<ChildSandboxProcess>();
  readonly #denials: SeatbeltDenials;
  readonly #disarmTtl: () => void;
  #log: { kill(): void } | undefined;
  #closing: Promise<void> | undefined;

  private constructor(config: SeatbeltSandboxConfig, egress: SessionEgress) {
    this.#config = config;
    this.#egress = egress;
    this.#root = makeSessionRoot(config.stateDir, config.state?.home);
    this.#denials = new SeatbeltDenials(this.#tag, config.logger, config.spec.onEvent);
    if (config.watchLog) this.#log = watchDenials(this.#denials, this.#tag);
    this.#disarmTtl = armTtl(config.spec, () => void this.close());
  }

  static async open(config: SeatbeltSandboxConfig): Promise<SeatbeltSandbox> {
    const egress = await SessionEgress.open(config.grants, config.logger, config.spec.onEvent);
    try {
      return new SeatbeltSandbox(config, egress);
    } catch (error) {
      egress.close();
      throw error;
    }
  }

  /** The distinct denials seen so far (a server that died on one says so). */
  get denials() {
    return this.#denials.denials;
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<ChildSandboxProcess> {
    this.#assertOpen();
    const { spec, hostEnv, logger } = this.#config;
    const setup = options.purpose === 'setup';
    const own =
      this.#config.autoMount && !setup
        ? ownFiles(command, process.cwd(), DATA_ROOTS, this.#config.hostHome)
        : undefined;
    for (const bind of own?.binds ?? []) {
      logger.info(
        `showing ${bind.source} read-only at the same path: the server's own files (--no-auto-mount turns this off)`,
      );
      spec.onEvent?.({ type: 'auto-mount', path: bind.source });
    }
    const argv = own?.command ?? command;
    const [name, ...args] = argv;
    if (name === undefined) throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
    const cwd = options.cwd ?? this.#root.home;
    const found = locateCommand(name, hostEnv.PATH, cwd);
    if (found === undefined)
      throw new SandboxFailureError(`command not found: ${name}`, { code: 'E_COMMAND_NOT_FOUND' });
    // An install step's own grants (a registry) get a proxy of their own, for that process only.
    const grants = options.network ? options.network.allow.map(parseGrant) : this.#config.grants;
    const egress = options.network ? await SessionEgress.open(grants, logger, spec.onEvent) : this.#egress;
    const mounts = setup ? [] : (spec.mounts ?? []);
    const runtime = [...commandBinds(found, ['/']).binds, ...commandBinds(process.execPath, ['/']).binds].map(
      (b) => b.source,
    );
    const closure = this.#config.closure(found);
    const profile = generateProfile({
      tag: this.#tag,
      home: this.#root.home,
      tmp: this.#root.tmp,
      runtime: [...runtime, found],
      dylibDirs: closure.dirs,
      runtimeLinks: closure.links,
      readOnly: [
        ...(own?.binds ?? []).map((b) => b.source),
        ...mounts.filter((m) => m.mode === 'ro').map((m) => m.hostPath),
      ],
      readWrite: mounts.filter((m) => m.mode === 'rw').map((m) => m.hostPath),
      trustFiles: this.#config.trust.files,
      ...(grants.length > 0 ? { proxyPort: egress.port } : {}),
    });
    const env = sessionEnv(this.#root, hostEnv, egress.port, {
      ...this.#config.trust.env,
      ...(setup ? {} : spec.env),
      ...options.env,
    });
    let proc: ChildSandboxProcess;
    try {
      const child = await startSandboxed(this.#config.sandboxExec, sandboxArgv(profile, found, args), {
        env,
        cwd,
      });
      proc = this.#adopt(child.pid as number, child);
    } catch (error) {
      if (egress !== this.#egress) egress.close();
      throw error;
    }
    if (egress !== this.#egress) void proc.exit.then(() => egress.close());
    return proc;
  }

  #adopt(pgid: number, child: Parameters<typeof adaptChildProcess>[0]): ChildSandboxProcess {
    this.#groups.add(pgid);
    writeOwner(this.#root.path, this.#groups);
    const signal = (sig: KillSignal) => signalAll([pgid], sessionProcesses(psTable(), new Set([pgid])), sig);
    const proc = adaptChildProcess(child, { signal });
    this.#live.add(proc);
    void proc.exit.then(() => this.#live.delete(proc));
    if (this.#closing) void proc.kill('SIGKILL');
    return proc;
  }

  #assertOpen(): void {
    if (this.#closing) throw new SandboxFailureError('sandbox is closed', { code: 'E_SANDBOX_CLOSED' });
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  /** Every process of every group this session started, and their descendants; then the rest. */
  async #shutdown(): Promise<void> {
    this.#disarmTtl();
    for (let round = 0; round < 3; round++) {
      const left = sessionProcesses(psTable(), this.#groups);
      signalAll(this.#groups, left, 'SIGKILL');
      if (left.length === 0) break;
      await new Promise((done) => setTimeout(done, 50));
    }
    await Promise.all([...this.#live].map((proc) => proc.exit));
    this.#egress.close();
    this.#log?.kill();
    this.#config.state?.release();
    rmSync(this.#root.path, { recursive: true, force: true });
  }
}

/** The whole environment of a sandboxed process: nothing of the host's but LANG. */
function sessionEnv(
  root: SessionRoot,
  hostEnv: Readonly<Record<string, string | undefined>>,
  port: number,
  extra: Readonly<Record<string, string>>,
): Record<string, string> {
  const proxy = `http://127.0.0.1:${port}`;
  return {
    PATH: ['/usr/local/bin', '/opt/homebrew/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin'].join(':'),
    HOME: root.home,
    TMPDIR: root.tmp,
    LANG: hostEnv.LANG || 'C.UTF-8',
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    NODE_USE_ENV_PROXY: '1',
    ...extra,
  };
}
