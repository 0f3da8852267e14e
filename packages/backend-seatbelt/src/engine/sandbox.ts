import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { dirname, join } from 'node:path';
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
  SandboxFailureError,
  type SandboxSpec,
} from '@mcpsandbox/core';
import { type Dialer, type NetGrant, parseGrant, type Resolver } from '@mcpsandbox/egress';
import type { SecretTrust } from '@mcpsandbox/egress/secrets';
import {
  type Bind,
  commandBinds,
  locateCommand,
  type NpxCacheOptions,
  ownFiles,
  prepareNpx,
  type StateDirs,
} from '@mcpsandbox/host-side';
import { denialLine } from '../log/denials.js';
import { SeatbeltDenials } from '../log/watch.js';
import type { DylibClosure } from '../profile/dylib-closure.js';
import { generateProfile } from '../profile/generate.js';
import { SessionEgress } from './egress.js';
import { sandboxArgv, startSandboxed } from './launch.js';
import {
  type GroupRecord,
  ownGroups,
  type PsRow,
  psTable,
  sessionProcesses,
  signalAll,
} from './processes.js';
import { makeSessionRoot, removeOutOfReach, type SessionRoot, writeOwner } from './session-root.js';

export interface SeatbeltSandboxConfig {
  readonly spec: SandboxSpec;
  readonly grants: readonly NetGrant[];
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  readonly hostHome: string;
  readonly stateDir: string;
  readonly state?: StateDirs;
  readonly autoMount: boolean;
  readonly npm: NpxCacheOptions;
  readonly trust: { readonly env: Readonly<Record<string, string>>; readonly files: readonly string[] };
  /** `--secret`: the host's trust (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE) is merged into the session CA's files. */
  readonly forwardsHostTrust: boolean;
  /** Tests: trust for bound hosts' certificates under `--secret` (else this process's default trust). */
  readonly secretUpstreamCa?: string;
  /** Tests: the egress proxy's resolver and upstream dialer. */
  readonly resolve?: Resolver;
  readonly dial?: Dialer;
  /** The sandbox-exec to run (a stand-in only in the lifecycle tests off macOS). */
  readonly sandboxExec: string;
  /** The runtime's dylib closure (otool on macOS). */
  readonly closure: (binary: string) => DylibClosure;
  /** Starts reading this session's denials (the unified log on macOS) into the reporter. */
  readonly watchLog: (reporter: SeatbeltDenials, tag: string) => { kill(): void } | undefined;
  readonly logger: Logger;
}

interface Spawn {
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** This process's own grants (an install step); absent: the session's. */
  readonly network?: readonly NetGrant[];
  readonly readOnly: readonly string[];
  readonly readWrite: readonly string[];
  /** The home this process gets (a throwaway one for an install step). */
  readonly home: string;
  readonly cwd?: string;
  /** `--secret`'s trust files, read-only (the server's processes only). */
  readonly secretTrust?: readonly string[];
}

/** Inside paths (a bind's dest) to the host paths they stand for: Seatbelt shows paths in place. */
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

/** How long after an exit the log's last lines are waited for. */
const REFUSAL_GRACE_MS = 500;

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
  /** The server's proxy: opened once the session CA (if any) is made. */
  #egress: SessionEgress | undefined;
  /** `--secret`: the session CA and its trust files; undefined without one. */
  #secrets: SecretTrust | undefined;
  readonly #tag = this.id.replace(/[^A-Za-z0-9_-]/g, '');
  readonly #groups = new Set<number>();
  /** The groups with their leaders' start times, for the owner file a later sweep reads. */
  readonly #records: GroupRecord[] = [];
  /** Leaders not yet reaped: their pid, so their group id, cannot have been given to another. */
  readonly #unreaped = new Set<number>();
  readonly #live = new Set<ChildSandboxProcess>();
  readonly #denials: SeatbeltDenials;
  /** The server's installed package (npx), read-only for every later exec. */
  readonly #installed: string[] = [];
  /** Paths the prepared command names inside, mapped to where they are on the host. */
  readonly #translate: Bind[] = [];
  readonly #disarmTtl: () => void;
  #log: { kill(): void } | undefined;
  #closing: Promise<void> | undefined;
  /** The note of a server that died after refusals, until it is said (close() waits for it). */
  #refusalNote: Promise<void> | undefined;

  private constructor(config: SeatbeltSandboxConfig) {
    this.#config = config;
    this.#root = makeSessionRoot(config.stateDir, config.state?.home);
    this.#denials = new SeatbeltDenials(this.#tag, config.logger, config.spec.onEvent);
    this.#log = config.watchLog(this.#denials, this.#tag);
    this.#disarmTtl = armTtl(config.spec, () => void this.close());
  }

  static async open(config: SeatbeltSandboxConfig): Promise<SeatbeltSandbox> {
    const sandbox = new SeatbeltSandbox(config);
    try {
      await sandbox.#start();
      return sandbox;
    } catch (error) {
      await sandbox.close();
      throw error;
    }
  }

  /**
   * The server's proxy; with a bound secret first the session CA (its code loaded only then) and
   * its trust files, in this session's root, which the profile never makes writable.
   */
  async #start(): Promise<void> {
    const { spec, grants, logger, hostEnv, forwardsHostTrust, secretUpstreamCa } = this.#config;
    const secrets = spec.network?.secrets ?? [];
    if (secrets.length > 0) {
      const { writeSecretTrust } = await import('@mcpsandbox/egress/secrets');
      this.#secrets = await writeSecretTrust({
        secrets,
        dir: join(this.#root.path, 'trust'),
        hostEnv,
        forwardsHostTrust,
        ...(secretUpstreamCa ? { upstreamCa: secretUpstreamCa } : {}),
      });
    }
    this.#egress = await SessionEgress.open(
      grants,
      logger,
      spec.onEvent,
      this.#secrets?.routing,
      this.#hooks(),
    );
  }

  #hooks() {
    const { resolve, dial } = this.#config;
    return { ...(resolve ? { resolve } : {}), ...(dial ? { dial } : {}) };
  }

  /** The distinct denials seen so far (a server that died on one says so). */
  get denials() {
    return this.#denials.denials;
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<ChildSandboxProcess> {
    this.#assertOpen();
    const { spec, logger } = this.#config;
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
    const mounts = setup ? [] : (spec.mounts ?? []);
    // The session CA is the server's: a setup step gets a proxy of its own, without it.
    const secrets = !setup && !options.network ? this.#secrets : undefined;
    const network = options.network
      ? options.network.allow.map(parseGrant)
      : setup && this.#secrets
        ? this.#config.grants
        : undefined;
    return this.#spawn({
      command: translate(own?.command ?? command, this.#translate),
      env: {
        ...this.#config.trust.env,
        ...secrets?.envAt(secrets.dir),
        ...(setup ? {} : spec.env),
        ...options.env,
      },
      ...(network ? { network } : {}),
      ...(secrets ? { secretTrust: secrets.files } : {}),
      readOnly: [
        ...this.#installed,
        ...(own?.binds ?? []).map((b) => b.source),
        ...mounts.filter((m) => m.mode === 'ro').map((m) => m.hostPath),
      ],
      readWrite: mounts.filter((m) => m.mode === 'rw').map((m) => m.hostPath),
      home: this.#root.home,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
  }

  /**
   * `npx -y pkg`: the shared install step (registry only, pinned) in a throwaway home with its
   * own install prefix as the one writable path; the server then runs from the installed
   * package, read-only, at its host path.
   */
  async prepare(command: readonly string[], options: PrepareOptions): Promise<readonly string[]> {
    this.#assertOpen();
    const { hostEnv, hostHome, logger, spec } = this.#config;
    const result = await prepareNpx(command, options, {
      cache: this.#config.npm,
      runAs: undefined,
      onEvent: spec.onEvent,
      logger,
      pin: (pkg, registry, trust) =>
        pinNpxPackage(pkg, { registry, trust, lockFile: defaultPinLockFile(hostEnv, hostHome), logger }),
      install: async (argv, binds, network, env) => {
        const home = mkdtempSync(join(this.#root.path, 'step-'));
        const proc = await this.#spawn({
          command: translate(argv, binds),
          env,
          network: network.allow.map(parseGrant),
          readOnly: binds.filter((b) => b.mode === 'ro').map((b) => b.source),
          readWrite: binds.filter((b) => b.mode === 'rw').map((b) => b.source),
          home,
        });
        // What the step's processes left goes with the session root if this fails.
        void proc.exit.then(() => {
          try {
            removeOutOfReach(home);
          } catch {}
        });
        return proc;
      },
    });
    if (!result.bind) return result.command;
    this.#installed.push(result.bind.source);
    this.#translate.push(result.bind);
    return translate(result.command, this.#translate);
  }

  async #spawn(plan: Spawn): Promise<ChildSandboxProcess> {
    this.#assertOpen();
    const { hostEnv, logger, spec } = this.#config;
    const [name, ...args] = plan.command;
    if (name === undefined) throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
    const cwd = plan.cwd ?? plan.home;
    const found = locateCommand(name, hostEnv.PATH, cwd);
    if (found === undefined)
      throw new SandboxFailureError(`command not found: ${name}`, { code: 'E_COMMAND_NOT_FOUND' });
    // A process with its own grants (an install step's registry) gets a proxy of its own.
    const grants = plan.network ?? this.#config.grants;
    const egress = plan.network
      ? await SessionEgress.open(grants, logger, spec.onEvent, undefined, this.#hooks())
      : this.#egress;
    if (egress === undefined) throw new SandboxFailureError('sandbox is not started', { code: 'E_EXEC' });
    let proc: ChildSandboxProcess;
    try {
      const runtime = [...commandBinds(found, ['/']).binds, ...commandBinds(process.execPath, ['/']).binds];
      // The command's libraries and those of the node that runs `#!/usr/bin/env node` scripts.
      const closures = [found, process.execPath].map((binary) => this.#config.closure(binary));
      const closure = { dirs: closures.flatMap((c) => c.dirs), links: closures.flatMap((c) => c.links) };
      const profile = generateProfile({
        tag: this.#tag,
        home: plan.home,
        tmp: this.#root.tmp,
        runtime: [...runtime.map((b) => b.source), found],
        dylibDirs: closure.dirs,
        runtimeLinks: closure.links,
        readOnly: plan.readOnly,
        readWrite: plan.readWrite,
        trustFiles: [...this.#config.trust.files, ...(plan.secretTrust ?? [])],
        ...(grants.length > 0 ? { proxyPort: egress.port } : {}),
      });
      const env = sessionEnv(plan.home, this.#root.tmp, hostEnv, egress.port, plan.env);
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
    this.#unreaped.add(pgid);
    child.once('exit', () => this.#unreaped.delete(pgid));
    const start = psTable().find((row) => row.pid === pgid)?.start;
    // A leader ps could not see (gone already) is not recorded: a sweep could not tell it from a stranger.
    if (start !== undefined) this.#records.push({ pgid, start });
    writeOwner(this.#root.path, this.#records);
    const signal = (sig: KillSignal) => {
      const rows = psTable();
      const own = this.#ownGroups(rows, [pgid]);
      signalAll(own, sessionProcesses(rows, own), sig);
    };
    const proc = adaptChildProcess(child, { signal });
    this.#live.add(proc);
    void proc.exit.then((status) => {
      this.#live.delete(proc);
      if (status.code !== 0 && !this.#closing) this.#sayIfRefused();
    });
    if (this.#closing) void proc.kill('SIGKILL');
    return proc;
  }

  /**
   * A server that died after Seatbelt refused it something: say so, naming the first refusal,
   * rather than leave only "exited before answering". The log's lines trail the exit a little.
   */
  #sayIfRefused(): void {
    // Kept (and awaited by close()): a bridge that closes at once would exit before it is said.
    this.#refusalNote = new Promise<void>((done) =>
      setTimeout(() => {
        done();
        const first = this.#denials.denials[0];
        if (!first) return;
        const count = this.#denials.denials.length;
        this.#config.logger.warn(
          `the server exited after ${count} macOS sandbox refusal(s); the first: ${denialLine(first)}`,
        );
      }, REFUSAL_GRACE_MS),
    );
  }

  /**
   * Of these group ids, the ones still this session's: a group whose leader ps could not time
   * at start is signalled only while that child has not been reaped (its id is then still ours).
   */
  #ownGroups(rows: readonly PsRow[], pgids: Iterable<number>): Set<number> {
    const wanted = new Set(pgids);
    const own = ownGroups(
      rows,
      this.#records.filter((record) => wanted.has(record.pgid)),
    );
    for (const pgid of wanted)
      if (!this.#records.some((r) => r.pgid === pgid) && this.#unreaped.has(pgid)) own.add(pgid);
    return own;
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
      const rows = psTable();
      const own = this.#ownGroups(rows, this.#groups);
      const left = sessionProcesses(rows, own);
      signalAll(own, left, 'SIGKILL');
      if (left.length === 0) break;
      await new Promise((done) => setTimeout(done, 50));
    }
    await Promise.all([...this.#live].map((proc) => proc.exit));
    await this.#refusalNote;
    this.#egress?.close();
    this.#log?.kill();
    this.#config.state?.release();
    try {
      removeOutOfReach(this.#root.path);
    } catch (error) {
      // Left as `<root>.removing`: the next start's sweep takes it.
      this.#config.logger.warn(`could not remove the session directory yet: ${(error as Error).message}`);
    }
  }
}

/** The whole environment of a sandboxed process: nothing of the host's but LANG. */
function sessionEnv(
  home: string,
  tmp: string,
  hostEnv: Readonly<Record<string, string | undefined>>,
  port: number,
  extra: Readonly<Record<string, string>>,
): Record<string, string> {
  const proxy = `http://127.0.0.1:${port}`;
  return {
    // Our own node first: `#!/usr/bin/env node` finds the runtime whose libraries the profile allows.
    PATH: [
      dirname(process.execPath),
      '/usr/local/bin',
      '/opt/homebrew/bin',
      '/usr/bin',
      '/bin',
      '/usr/sbin',
      '/sbin',
    ].join(':'),
    HOME: home,
    TMPDIR: tmp,
    LANG: hostEnv.LANG || 'C.UTF-8',
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    NODE_USE_ENV_PROXY: '1',
    ...extra,
  };
}
