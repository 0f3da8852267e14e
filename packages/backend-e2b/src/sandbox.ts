import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  armTtl,
  type ExecOptions,
  type Logger,
  type NetworkSpec,
  type PrepareOptions,
  type Sandbox,
  SandboxFailureError,
  type SandboxProcess,
  type SandboxSpec,
  UsageError,
} from '@mcpsandbox/core';
import { CommandExitError, type Sandbox as SdkSandbox } from 'e2b';
import { E2B_ERROR_CODES, wrapE2BError } from './errors.js';
import type { CopyPlan } from './mounts.js';
import { toE2BEgress } from './network.js';
import { parseNpx } from './npx.js';
import { type E2BProcess, startProcess } from './process.js';
import { shellQuote } from './shell.js';

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
}

/** Files uploaded per request batch. */
const UPLOAD_BATCH = 16;

export class E2BSandbox implements Sandbox {
  readonly id: string;
  readonly #sdk: SdkSandbox;
  readonly #spec: SandboxSpec;
  readonly #settings: SandboxSettings;
  readonly #live = new Set<E2BProcess>();
  readonly #disarmTtl: () => void;
  #closing: Promise<void> | undefined;
  #networkWidened = false;
  /** A restore of the spec's egress still under way: nothing may start before it lands. */
  #restoring: Promise<void> | undefined;

  constructor(sdk: SdkSandbox, spec: SandboxSpec, settings: SandboxSettings) {
    this.id = sdk.sandboxId;
    this.#sdk = sdk;
    this.#spec = spec;
    this.#settings = settings;
    // E2B reaps the VM at the same deadline even if this host dies; this timer ends it promptly
    // when the host is alive, so exit statuses arrive without waiting for the stream to break.
    this.#disarmTtl = armTtl(spec, () => void this.close());
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<SandboxProcess> {
    this.#assertOpen();
    await this.#restoring;
    this.#assertOpen();
    const widened = options.network ? await this.#widenNetwork(options.network) : false;
    let proc: E2BProcess;
    try {
      proc = await startProcess(this.#sdk, command, {
        envs: { ...this.#spec.env, ...options.env },
        ...(options.cwd ? { cwd: options.cwd } : {}),
        logger: this.#settings.logger,
        ...(this.#spec.onEvent ? { onEvent: this.#spec.onEvent } : {}),
        requestTimeoutMs: this.#settings.requestTimeoutMs,
      });
    } catch (error) {
      if (widened) await this.#restoreNetwork();
      throw error;
    }
    this.#live.add(proc);
    void proc.exit.then(() => {
      this.#live.delete(proc);
      if (widened) {
        this.#restoring = this.#restoreNetwork()
          .catch(() => undefined)
          .finally(() => {
            this.#restoring = undefined;
          });
      }
    });
    return proc;
  }

  /**
   * `npx -y <pkg> …` becomes an `npm install` into a directory in the VM, then the installed
   * binary: the server starts only once it is installed, so nothing the client sends early is
   * read by npm or lost in a cold start. Other commands are returned unchanged.
   */
  async prepare(command: readonly string[], options: PrepareOptions): Promise<readonly string[]> {
    const npx = parseNpx(command);
    if (!npx) return command;
    this.#assertOpen();
    const spec = this.#settings.pin ? await this.#settings.pin(npx.spec) : npx.spec;
    const registry = this.#settings.npmRegistry
      ? ` --registry ${shellQuote(this.#settings.npmRegistry)}`
      : '';
    const dir = `.mcp-sandbox/npx/${createHash('sha256').update(spec).digest('hex').slice(0, 16)}`;
    const script = [
      'set -e',
      `d="$HOME/${dir}"`,
      'mkdir -p "$d"',
      'cd "$d"',
      `[ -f package.json ] || printf '{"private":true}\\n' > package.json`,
      `npm install --no-audit --no-fund --no-update-notifier --loglevel=error${registry} ${shellQuote(spec)} 1>&2`,
      `node -e ${shellQuote(RESOLVE_BIN)} ${shellQuote(npx.bin ?? '')}`,
    ].join('\n');
    this.#spec.onEvent?.({ type: 'e2b-npx-install', spec: npx.spec });
    const widened =
      this.#settings.installHosts.length > 0
        ? await this.#widenNetwork({
            allow: [...(this.#spec.network?.allow ?? []), ...this.#settings.installHosts],
          })
        : false;
    const encoder = new TextEncoder();
    let stdout = '';
    try {
      const result = await this.#sdk.commands.run(`bash -c ${shellQuote(script)}`, {
        envs: { ...this.#spec.env },
        timeoutMs: this.#settings.installTimeoutMs,
        onStderr: (data) => options.stderr(encoder.encode(data)),
        onStdout: (data) => {
          stdout += data;
        },
        ...(options.signal ? { signal: options.signal } : {}),
      });
      stdout = result.stdout;
    } catch (error) {
      if (error instanceof CommandExitError) {
        throw new SandboxFailureError(
          `installing ${npx.spec} in the E2B sandbox failed with exit code ${error.exitCode}; see the npm output above`,
          { cause: error, code: E2B_ERROR_CODES.install },
        );
      }
      throw wrapE2BError(error, `install ${npx.spec}`);
    } finally {
      if (widened) await this.#restoreNetwork();
    }
    const bin = stdout.trim().split('\n').pop() ?? '';
    if (!bin.startsWith('/')) {
      throw new SandboxFailureError(`installed ${npx.spec} but found no binary to run`, {
        code: E2B_ERROR_CODES.install,
      });
    }
    return [bin, ...npx.args];
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
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

  /**
   * E2B's egress rules belong to the whole VM, so a per-process grant is applied while that
   * process runs and nothing else does, then the spec's rules come back.
   */
  async #widenNetwork(network: NetworkSpec): Promise<boolean> {
    const wanted = toE2BEgress(network);
    const base = toE2BEgress(this.#spec.network);
    if (wanted.summary === base.summary) return false;
    if (this.#live.size > 0 || this.#networkWidened) {
      throw new UsageError(
        'e2b applies network grants to the whole VM: a per-process grant needs every other process in the sandbox to have exited',
      );
    }
    this.#networkWidened = true;
    try {
      await this.#sdk.updateNetwork(toUpdate(wanted));
    } catch (error) {
      this.#networkWidened = false;
      throw wrapE2BError(error, 'update the sandbox network rules');
    }
    this.#spec.onEvent?.({ type: 'network', scope: 'process', egress: wanted.summary });
    return true;
  }

  async #restoreNetwork(): Promise<void> {
    try {
      await this.#sdk.updateNetwork(toUpdate(toE2BEgress(this.#spec.network)));
      this.#networkWidened = false;
      this.#spec.onEvent?.({
        type: 'network',
        scope: 'sandbox',
        egress: toE2BEgress(this.#spec.network).summary,
      });
    } catch (error) {
      // Never run on with wider egress than granted: end the sandbox instead.
      await this.close();
      throw wrapE2BError(error, 'restore the sandbox network rules (the sandbox was closed)');
    }
  }

  /** Copies planned files in; called once, right after creation, before anything runs. */
  async upload(plan: CopyPlan): Promise<void> {
    try {
      for (let i = 0; i < plan.files.length; i += UPLOAD_BATCH) {
        const batch = plan.files.slice(i, i + UPLOAD_BATCH);
        const entries = await Promise.all(
          batch.map(async (file) => {
            const data = await readFile(file.hostPath);
            return {
              path: file.sandboxPath,
              data: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer,
            };
          }),
        );
        await this.#sdk.files.write(entries, {
          useOctetStream: true,
          requestTimeoutMs: this.#settings.requestTimeoutMs,
        });
      }
      const executables = plan.files
        .filter((file) => file.executable)
        .map((file) => shellQuote(file.sandboxPath));
      if (executables.length > 0) {
        await this.#sdk.commands.run(`chmod +x ${executables.join(' ')}`, { timeoutMs: 60_000 });
      }
    } catch (error) {
      throw wrapE2BError(error, 'copy mounted files into the sandbox');
    }
  }
}

function toUpdate(egress: ReturnType<typeof toE2BEgress>) {
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
