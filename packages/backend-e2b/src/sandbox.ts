import { createHash } from 'node:crypto';
import {
  armTtl,
  createRedactor,
  type ExecOptions,
  type Logger,
  type NetworkSpec,
  type PrepareOptions,
  type Redactor,
  type Sandbox,
  SandboxFailureError,
  type SandboxProcess,
  type SandboxSpec,
  UsageError,
} from '@mcpsandbox/core';
import type { Sandbox as SdkSandbox } from 'e2b';
import type { EnvdClient } from './envd.js';
import { E2B_ERROR_CODES, wrapE2BError } from './errors.js';
import { runHelper } from './helper.js';
import { type CopyPlan, readPlanned } from './mounts.js';
import { type E2BEgress, toE2BEgress } from './network.js';
import { parseNpx } from './npx.js';
import { type E2BProcess, startProcess } from './process.js';
import { OutputRelay } from './relay.js';
import { shellQuote } from './shell.js';
import { oneLine } from './text.js';
import { isUvxStart, uvxRefusal } from './uvx.js';

export interface SandboxSettings {
  readonly logger: Logger;
  readonly requestTimeoutMs: number;
  /** Hosts an `npx -y` install may reach while it runs, when the spec grants less. */
  readonly installHosts: readonly string[];
  readonly installTimeoutMs: number;
  /** Turns an `npx -y` spec into the exact one to install (pinned installs); absent: as given. */
  readonly pin?: (spec: string) => Promise<string>;
  /** Registry the install in the VM uses, when not npm's default. */
  readonly npmRegistry?: string;
  /** Mounts to copy in once the install is done (or at the first exec). */
  readonly plan: CopyPlan;
}

/** Files uploaded per request batch. */
const UPLOAD_BATCH = 16;
/** Bytes of paths per `chmod` helper, well under any argument limit. */
const CHMOD_BATCH_BYTES = 64 * 1024;

/**
 * Starts the install in a process group of its own (job control gives the background job one)
 * and prints that group's id first, before anything of the install can run; the install's own
 * output goes to stderr, and its stdin is empty. The host kills the whole group once the
 * launcher ends, before the network rules are restored.
 */
const INSTALL_LAUNCHER = [
  'set -m',
  'bash --noprofile --norc -c "$1" "$2" </dev/null 1>&2 &',
  'pg=$!',
  'set +m',
  `printf '%s\\n' "$pg"`,
  'wait "$pg"',
].join('\n');

export class E2BSandbox implements Sandbox {
  readonly id: string;
  readonly #sdk: SdkSandbox;
  readonly #envd: EnvdClient;
  readonly #spec: SandboxSpec;
  readonly #settings: SandboxSettings;
  readonly #redact: Redactor;
  readonly #live = new Set<E2BProcess>();
  readonly #disarmTtl: () => void;
  #closing: Promise<void> | undefined;
  /** Processes started (or starting) under the session's own rules. */
  #active = 0;
  /** A wider grant (a process's own, or the install's) is in force until its restore lands. */
  #granted = false;
  #copying: Promise<void> | undefined;

  constructor(sdk: SdkSandbox, envd: EnvdClient, spec: SandboxSpec, settings: SandboxSettings) {
    this.id = sdk.sandboxId;
    this.#sdk = sdk;
    this.#envd = envd;
    this.#spec = spec;
    this.#settings = settings;
    this.#redact = createRedactor(Object.values(spec.env));
    // E2B reaps the VM at the same deadline even if this host dies; this timer ends it promptly
    // when the host is alive, so exit statuses arrive without waiting for the stream to break.
    this.#disarmTtl = armTtl(spec, () => void this.close());
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<SandboxProcess> {
    this.#assertOpen();
    const wanted = options.network ? this.#wider(options.network) : undefined;
    // Checked and claimed before any await, so two calls in the same tick cannot both pass.
    this.#claim(wanted !== undefined);
    let proc: E2BProcess;
    try {
      if (wanted) await this.#applyNetwork(wanted, 'process');
      else await this.#copyMounts();
      this.#assertOpen();
      proc = await startProcess(this.#sdk, this.#envd, command, {
        envs: { ...this.#spec.env, ...options.env },
        ...(options.cwd ? { cwd: options.cwd } : {}),
        logger: this.#settings.logger,
        ...(this.#spec.onEvent ? { onEvent: this.#spec.onEvent } : {}),
        requestTimeoutMs: this.#settings.requestTimeoutMs,
        redact: this.#redact,
      });
    } catch (error) {
      await this.#release(wanted !== undefined).catch(() => undefined);
      throw error;
    }
    this.#live.add(proc);
    void proc.exit.then(() => {
      this.#live.delete(proc);
      void this.#release(wanted !== undefined).catch(() => undefined);
    });
    return proc;
  }

  /**
   * `npx -y <pkg> …` becomes an `npm install` into a directory in the VM, then the installed
   * binary: the server starts only once it is installed, so nothing the client sends early is
   * read by npm or lost in a cold start. The install gets the registry and nothing else: no
   * environment, no mounts (they are copied in after it), its own process group, killed before
   * the session's network rules come back. Other commands are returned unchanged.
   */
  async prepare(command: readonly string[], options: PrepareOptions): Promise<readonly string[]> {
    const npx = parseNpx(command);
    this.#assertOpen();
    if (isUvxStart(command)) throw uvxRefusal();
    if (!npx) {
      await this.#copyMounts();
      return command;
    }
    // Pinned installs: the exact version recorded on first use (or a refusal), never "latest now".
    const spec = this.#settings.pin ? await this.#settings.pin(npx.spec) : npx.spec;
    const dir = `.mcp-sandbox/npx/${createHash('sha256').update(spec).digest('hex').slice(0, 16)}`;
    const wanted =
      this.#settings.installHosts.length > 0
        ? this.#wider({ allow: [...(this.#spec.network?.allow ?? []), ...this.#settings.installHosts] })
        : undefined;
    this.#claim(wanted !== undefined);
    this.#spec.onEvent?.({ type: 'e2b-npx-install', spec: npx.spec });
    const relay = new OutputRelay(options.stderr, this.#spec.onEvent, this.#redact);
    try {
      if (wanted) await this.#applyNetwork(wanted, 'install');
      await this.#install(spec, dir, relay, options.signal);
    } finally {
      relay.end();
      // Restored only after the install's process group is dead (#install's finally).
      await this.#release(wanted !== undefined);
    }
    const bin = await this.#resolveBin(dir, spec, npx.bin, options);
    await this.#copyMounts();
    return [bin, ...npx.args];
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #install(spec: string, dir: string, relay: OutputRelay, signal: AbortSignal | undefined) {
    const registry = this.#settings.npmRegistry
      ? ` --registry ${shellQuote(this.#settings.npmRegistry)}`
      : '';
    const script = [
      'set -e',
      `d="$HOME/${dir}"`,
      'mkdir -p "$d"',
      'cd "$d"',
      `[ -f package.json ] || printf '{"private":true}\\n' > package.json`,
      `exec npm install --no-audit --no-fund --no-update-notifier --loglevel=error${registry} "$0"`,
    ].join('\n');
    let launcher: number | undefined;
    let firstLine = '';
    try {
      const result = await runHelper(this.#envd, INSTALL_LAUNCHER, {
        // `$0` of the launcher, then the install script, then the package spec (the script's `$0`).
        args: ['launcher', script, spec],
        timeoutMs: this.#settings.installTimeoutMs,
        ...(signal ? { signal } : {}),
        onStart: (pid) => {
          launcher = pid;
        },
        onStdout: (chunk) => {
          if (!firstLine.includes('\n') && firstLine.length < 32) firstLine += Buffer.from(chunk).toString();
        },
        onStderr: (chunk) => relay.push(chunk),
      });
      if (result.status.code !== 0) {
        const how =
          result.status.code === null
            ? `was killed by ${result.status.signal}`
            : `failed with exit code ${result.status.code}`;
        throw new SandboxFailureError(
          `installing ${spec} in the E2B sandbox ${how}; see the npm output above`,
          {
            code: E2B_ERROR_CODES.install,
          },
        );
      }
    } catch (error) {
      throw wrapE2BError(error, `install ${spec}`);
    } finally {
      await this.#killInstall(launcher, firstLine);
    }
  }

  /** Kills the install's process group (and the launcher): nothing it started outlives it. */
  async #killInstall(launcher: number | undefined, firstLine: string): Promise<void> {
    if (launcher === undefined) return;
    const group = /^(\d{1,9})\n/.exec(firstLine)?.[1];
    const targets = [...(group ? [`-${group}`] : []), String(launcher)];
    // SIGKILL lands when each process next runs: on a busy VM a member can outlive the kill for a
    // moment, so the rules are restored only once the group is gone (or after 2 s, a zombie left).
    const gone = group
      ? `n=0; while kill -0 -- -${group} 2>/dev/null && [ $n -lt 200 ]; do sleep 0.01; n=$((n+1)); done; `
      : '';
    try {
      await runHelper(this.#envd, `kill -KILL -- ${targets.join(' ')} 2>/dev/null; ${gone}exit 0`, {
        timeoutMs: this.#settings.requestTimeoutMs,
      });
    } catch (error) {
      await this.close();
      throw new SandboxFailureError(
        `could not stop what the install started (${oneLine(error)}); the sandbox was closed`,
        { code: E2B_ERROR_CODES.install, cause: error },
      );
    }
    if (!group) {
      // The install ran, but its group is unknown: what it started may still run. Fail closed.
      await this.close();
      throw new SandboxFailureError(
        'the install in the E2B sandbox did not report its process group; the sandbox was closed',
        { code: E2B_ERROR_CODES.install },
      );
    }
  }

  /** Under the session's own rules: prints the absolute path of the binary npx would run. */
  async #resolveBin(
    dir: string,
    spec: string,
    bin: string | undefined,
    options: PrepareOptions,
  ): Promise<string> {
    const relay = new OutputRelay(options.stderr, this.#spec.onEvent, this.#redact);
    const result = await runHelper(this.#envd, `cd "$HOME/${dir}" && exec node -e "$1" "$2"`, {
      args: ['resolve', RESOLVE_BIN, bin ?? ''],
      timeoutMs: this.#settings.requestTimeoutMs,
      keepStdout: 4096,
      onStderr: (chunk) => relay.push(chunk),
    }).catch((error: unknown) => {
      throw wrapE2BError(error, `find the binary of ${spec}`);
    });
    relay.end();
    const path = result.stdout.trim().split('\n').pop() ?? '';
    if (result.status.code !== 0 || !path.startsWith('/')) {
      throw new SandboxFailureError(`installed ${spec} but found no binary to run`, {
        code: E2B_ERROR_CODES.install,
      });
    }
    return path;
  }

  async #shutdown(): Promise<void> {
    this.#disarmTtl();
    for (const proc of this.#live) proc.expectEnd();
    try {
      await this.#sdk.kill({ requestTimeoutMs: this.#settings.requestTimeoutMs });
    } catch (error) {
      // The VM still dies at its timeout; say so rather than fail the shutdown path.
      this.#settings.logger.warn(
        `could not kill E2B sandbox ${this.id} (${wrapE2BError(error, 'kill the sandbox').message}); E2B reaps it at its timeout`,
      );
    } finally {
      for (const proc of this.#live) proc.abandon({ code: null, signal: 'SIGKILL' });
      this.#live.clear();
    }
  }

  #assertOpen() {
    if (this.#closing) throw new SandboxFailureError('sandbox is closed', { code: 'E_SANDBOX_CLOSED' });
  }

  /** The egress `network` asks for, or undefined when it is no wider than the session's. */
  #wider(network: NetworkSpec): E2BEgress | undefined {
    const wanted = toE2BEgress(network);
    return wanted.summary === toE2BEgress(this.#spec.network).summary ? undefined : wanted;
  }

  /**
   * E2B's egress rules belong to the whole VM. A wider grant is in force only while its one
   * process runs and nothing else does; nothing starts until the session's rules are back; and no
   * grant is widened once mounted files are in the VM, where it could read them.
   */
  #claim(widen: boolean): void {
    if (this.#granted) {
      throw new UsageError(
        'e2b applies network grants to the whole VM: nothing else may start while a process runs with its own grant',
      );
    }
    if (!widen) {
      this.#active += 1;
      return;
    }
    if (this.#active > 0) {
      throw new UsageError(
        'e2b applies network grants to the whole VM: a per-process grant needs every other process in the sandbox to have exited',
      );
    }
    if (this.#copying && this.#settings.plan.files.length > 0) {
      throw new UsageError(
        'e2b applies network grants to the whole VM: a grant wider than the session is refused once mounted files are in it (with --setup steps, grant the registry to the session or use a template with the server preinstalled)',
      );
    }
    this.#granted = true;
  }

  async #release(widened: boolean): Promise<void> {
    if (!widened) {
      this.#active -= 1;
      return;
    }
    await this.#restoreNetwork();
  }

  async #applyNetwork(wanted: E2BEgress, scope: 'process' | 'install'): Promise<void> {
    try {
      await this.#sdk.updateNetwork(toUpdate(wanted));
    } catch (error) {
      throw wrapE2BError(error, 'update the sandbox network rules');
    }
    this.#spec.onEvent?.({ type: 'network', scope, egress: wanted.summary });
  }

  async #restoreNetwork(): Promise<void> {
    const base = toE2BEgress(this.#spec.network);
    try {
      await this.#sdk.updateNetwork(toUpdate(base));
    } catch (error) {
      // Never run on with wider egress than granted: end the sandbox instead.
      await this.close();
      throw wrapE2BError(error, 'restore the sandbox network rules (the sandbox was closed)');
    }
    this.#granted = false;
    this.#spec.onEvent?.({ type: 'network', scope: 'sandbox', egress: base.summary });
  }

  /** Copies the planned mounts in, once: after the install, before anything else runs. */
  #copyMounts(): Promise<void> {
    this.#copying ??= this.#upload(this.#settings.plan);
    return this.#copying;
  }

  async #upload(plan: CopyPlan): Promise<void> {
    if (plan.files.length === 0) return;
    try {
      for (let i = 0; i < plan.files.length; i += UPLOAD_BATCH) {
        await Promise.all(
          plan.files.slice(i, i + UPLOAD_BATCH).map(async (file) => {
            await this.#envd.writeFile(file.sandboxPath, await readPlanned(file));
          }),
        );
      }
      const executables = plan.files.filter((file) => file.executable).map((file) => file.sandboxPath);
      for (const batch of byteBatches(executables, CHMOD_BATCH_BYTES)) {
        const result = await runHelper(this.#envd, 'chmod +x -- "$@"', {
          args: ['chmod', ...batch],
          timeoutMs: this.#settings.requestTimeoutMs,
        });
        if (result.status.code !== 0) {
          throw new SandboxFailureError(`chmod in the sandbox exited with ${result.status.code}`, {
            code: E2B_ERROR_CODES.other,
          });
        }
      }
    } catch (error) {
      throw wrapE2BError(error, 'copy mounted files into the sandbox');
    }
    this.#spec.onEvent?.({ type: 'mounts-copied', files: plan.files.length, bytes: plan.totalBytes });
  }
}

function byteBatches(items: readonly string[], maxBytes: number): string[][] {
  const batches: string[][] = [];
  let batch: string[] = [];
  let size = 0;
  for (const item of items) {
    const length = Buffer.byteLength(item) + 1;
    if (batch.length > 0 && size + length > maxBytes) {
      batches.push(batch);
      batch = [];
      size = 0;
    }
    batch.push(item);
    size += length;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

function toUpdate(egress: E2BEgress) {
  if (egress.network) return { allowOut: egress.network.allowOut, denyOut: egress.network.denyOut };
  if (egress.allowInternetAccess === false) return { allowInternetAccess: false };
  return { allowInternetAccess: true };
}

/** Runs in the VM after the install: prints the absolute path of the binary npx would run. */
const RESOLVE_BIN = String.raw`
const fs = require('fs'), path = require('path');
const wanted = process.argv[1];
const deps = Object.keys(JSON.parse(fs.readFileSync('package.json', 'utf8')).dependencies || {});
if (deps.length !== 1) { console.error('expected one installed package, found ' + deps.length); process.exit(2); }
const name = deps[0];
const manifest = JSON.parse(fs.readFileSync(path.join('node_modules', name, 'package.json'), 'utf8'));
const bins = typeof manifest.bin === 'string' ? { [name.replace(/^@[^/]+\//, '')]: manifest.bin } : manifest.bin || {};
const names = Object.keys(bins);
const unscoped = name.replace(/^@[^/]+\//, '');
const bin = wanted || (names.length === 1 ? names[0] : names.includes(unscoped) ? unscoped : undefined);
if (!bin || !names.includes(bin)) { console.error('cannot tell which binary of ' + name + ' to run: ' + names.join(', ')); process.exit(3); }
console.log(path.resolve('node_modules', '.bin', bin));
`;
