import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import {
  armTtl,
  type BackendFactoryOptions,
  drainOrClose,
  type ExecOptions,
  type ExitStatus,
  type KillSignal,
  type Logger,
  ProcessClosedError,
  type Sandbox,
  type SandboxBackend,
  SandboxFailureError,
  type SandboxProcess,
  type SandboxSpec,
  SPECIFICATION_VERSION,
  silentLogger,
  UsageError,
} from '@mcpsandbox/core';
import { emptyRegistry, type Invoke, type Registered, register, serveApp } from './app-server.js';
import { parseUntrusted } from './copy.js';
import { PROBE_APP_SOURCE, VM_PROBE_COMMAND } from './probe-app.js';
import type { EngineEvent } from './runtime.js';
import { type InternalSandboxOptions, MCPAppSandbox } from './sandbox.js';
import type { Isolation } from './session.js';

export interface VmBackendOptions extends BackendFactoryOptions {
  /**
   * Runs each app's child process inside this backend (e.g. the `local` OS sandbox), which adds
   * its own network, pid and user separation. Without it the child is a plain host process.
   */
  readonly hostBackend?: SandboxBackend;
  /**
   * Default `process`. `in-process-trusted` runs apps in the host process: no security boundary
   * (the backend's isolation is then `none`); for trusted apps and tests.
   */
  readonly isolation?: Isolation;
  /** CPU budget per entry into the app (a tool call, a timer), in ms. Default 5000. */
  readonly timeoutMs?: number;
  /** Heap cap of the child in MiB. Default 128. */
  readonly memoryLimitMb?: number;
}

const LIMITS = { maxBytes: 4 * 1024 * 1024, maxDepth: 64 };
const RAW_BACKPRESSURE_BYTES = 1024 * 1024;

/**
 * The `vm` backend: each `exec(['./app.js'])` (or `['node', './app.js']`) runs a JavaScript MCP
 * app in an {@link MCPAppSandbox} and serves it over stdio with the MCP SDK's `Server`, which
 * runs on the host, outside the context. `exec(['--raw', './prog.js'])` runs a program on the
 * raw `io` byte API instead; `exec(['mcp-sandbox-vm-probe', ...])` runs the conformance probe.
 */
export function createVmBackend(options: VmBackendOptions = {}): SandboxBackend {
  const settings = options.settings ?? {};
  const isolation = options.isolation ?? isolationSetting(settings.isolation);
  const timeoutMs = options.timeoutMs ?? numberSetting(settings.timeout) ?? 5000;
  const memoryLimitMb = options.memoryLimitMb ?? numberSetting(settings.memory) ?? 128;
  const logger = options.logger ?? silentLogger;
  const config: VmConfig = { isolation, timeoutMs, memoryLimitMb, logger, hostBackend: options.hostBackend };
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'vm',
    isolation: isolation === 'in-process-trusted' ? 'none' : 'language',
    describe() {
      const where =
        isolation === 'in-process-trusted'
          ? 'in the host process: not a security boundary, for trusted apps only'
          : options.hostBackend
            ? `in a locked-down Node child inside the ${options.hostBackend.id} sandbox`
            : 'in a locked-down Node child (permission model; no OS sandbox around it: loopback network and signals stay reachable)';
      return `node:vm context ${where}; JavaScript apps only`;
    },
    async create(spec) {
      spec.onEvent?.({
        type: 'vm-sandbox',
        isolation,
        osSandbox: isolation === 'process' ? (options.hostBackend?.id ?? null) : null,
        timeoutMs,
        memoryLimitMb,
      });
      return new VmSandbox(spec, config);
    },
  };
}

/** The loader's entry point (`--backend @mcpsandbox/vm-sandbox`). */
export const createBackend = createVmBackend;

/** A runner or interpreter of Python, or a `.py` file: never an app this backend can run. */
function isPythonStart(target: string, args: readonly string[]): boolean {
  const name = basename(target.replace(/\\/g, '/'));
  return (
    name === 'uvx' ||
    name === 'pipx' ||
    (name === 'uv' && args[0] === 'tool' && args[1] === 'run') ||
    /^python(\d+(\.\d+)?)?$/.test(name) ||
    /\.py$/.test(name)
  );
}

function pythonRefusal(): UsageError {
  return new UsageError(
    'the vm backend runs JavaScript apps; a Python server (uvx, uv tool run, pipx run, python) runs with --backend local, an OS sandbox that gives uvx an install step of its own',
  );
}

function isolationSetting(value: string | undefined): Isolation {
  if (value === undefined || value === 'process') return 'process';
  if (value === 'in-process-trusted') return value;
  throw new UsageError(
    `vm backend: isolation must be 'process' or 'in-process-trusted' (not a security boundary), not ${JSON.stringify(value)}`,
  );
}

function numberSetting(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`not a positive number: ${value}`);
  return n;
}

interface VmConfig {
  readonly isolation: Isolation;
  readonly timeoutMs: number;
  readonly memoryLimitMb: number;
  readonly logger: Logger;
  readonly hostBackend: SandboxBackend | undefined;
}

class VmSandbox implements Sandbox {
  readonly id = `vm-${randomUUID()}`;
  readonly #spec: SandboxSpec;
  readonly #config: VmConfig;
  readonly #live = new Set<AppProcess>();
  readonly #disarmTtl: () => void;
  #closing: Promise<void> | undefined;

  constructor(spec: SandboxSpec, config: VmConfig) {
    this.#spec = spec;
    this.#config = config;
    this.#disarmTtl = armTtl(spec, () => void this.close());
  }

  async exec(command: readonly string[], options: ExecOptions = {}): Promise<SandboxProcess> {
    if (this.#closing) throw new SandboxFailureError('sandbox is closed', { code: 'E_SANDBOX_CLOSED' });
    const args = [...command];
    if (args[0] !== undefined && (args[0] === 'node' || basename(args[0]) === 'node')) args.shift();
    let raw = false;
    if (args[0] === '--raw') {
      raw = true;
      args.shift();
    }
    const target = args.shift();
    if (target === undefined) throw new UsageError('vm backend: exec needs an app file');
    if (isPythonStart(target, args)) throw pythonRefusal();
    let code: string;
    if (target === VM_PROBE_COMMAND) {
      raw = true;
      code = PROBE_APP_SOURCE;
    } else {
      const path = resolve(options.cwd ?? process.cwd(), target);
      try {
        code = await readFile(path, 'utf8');
      } catch (error) {
        throw new SandboxFailureError(`vm backend: cannot read the app ${path}`, {
          cause: error,
          code: 'E_COMMAND_NOT_FOUND',
        });
      }
      // A shebang line is fine in a file Node runs, not in a script body.
      if (code.startsWith('#!')) code = `//${code.slice(2)}`;
    }
    const env = { ...this.#spec.env, ...options.env };
    const proc = new AppProcess({ code, filename: target, raw, env, argv: args, config: this.#config });
    this.#live.add(proc);
    void proc.exit.then(() => this.#live.delete(proc));
    await proc.start();
    return proc;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#disarmTtl();
      await Promise.all(
        [...this.#live].map(async (proc) => {
          await proc.kill('SIGKILL');
          await proc.exit;
        }),
      );
    })();
    return this.#closing;
  }
}

/** One app as a contract process: stdio is MCP (or raw bytes), the app runs in the sandbox. */
class AppProcess implements SandboxProcess {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly exit: Promise<ExitStatus>;
  readonly #sandbox: MCPAppSandbox;
  readonly #raw: boolean;
  readonly #stdin = new PassThrough();
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly #registered: Registered = emptyRegistry();
  #resolveExit!: (status: ExitStatus) => void;
  #exited = false;
  #stdinClosed = false;
  #server: { close(): Promise<void> } | undefined;
  #nextId = 1;
  #tail: Promise<void> = Promise.resolve();
  readonly #inflight = new Set<Promise<void>>();
  #unacked = 0;
  readonly #acked = new EventEmitter();
  #markServed!: () => void;
  readonly #served = new Promise<void>((resolve) => {
    this.#markServed = resolve;
  });

  constructor(init: {
    code: string;
    filename: string;
    raw: boolean;
    env: Record<string, string>;
    argv: string[];
    config: VmConfig;
  }) {
    this.#raw = init.raw;
    this.exit = new Promise((resolve) => {
      this.#resolveExit = resolve;
    });
    const options: InternalSandboxOptions = {
      code: init.code,
      filename: init.filename,
      isolation: init.config.isolation,
      timeout: init.config.timeoutMs,
      memoryLimitMb: init.config.memoryLimitMb,
      logger: init.config.logger,
      ...(init.config.hostBackend ? { hostBackend: init.config.hostBackend } : {}),
      api: init.raw ? 'raw' : 'mcp',
      env: init.env,
      argv: init.argv,
      stayAlive: !init.raw,
      onEngineEvent: (event) => this.#onEngineEvent(event),
    };
    this.#sandbox = new MCPAppSandbox(options);
    this.#sandbox.on('log', (entry) => this.#diagnostic(entry.message));
    this.#sandbox.on('error', (error) => {
      this.#diagnostic(`Uncaught ${error.name}: ${error.message}`);
      // Like Node: an uncaught error ends a plain program; a server keeps serving.
      if (this.#raw) void this.#finish({ code: 1, signal: null });
    });
    this.#sandbox.on('crash', (info) => {
      if (info.reason === 'disposed') return;
      this.#diagnostic(`vm-sandbox: the app crashed (${info.reason}): ${info.message}`);
      void this.#finish({ code: 1, signal: null });
    });
    this.#sandbox.on('finished', () => void this.#finish({ code: 0, signal: null }));
  }

  async start(): Promise<void> {
    void this.#sandbox.run();
  }

  write(chunk: Uint8Array): Promise<void> {
    const result = this.#tail.then(async () => {
      if (this.#stdinClosed || this.#exited) throw new ProcessClosedError('stdin is closed');
      if (this.#raw) {
        // Backpressure: while the app's output waits unread, its input waits too.
        while (this.#unacked > RAW_BACKPRESSURE_BYTES && !this.#exited) await once(this.#acked, 'ack');
        this.#sandbox.deliver({ t: 'data', chunk: Buffer.from(chunk).toString('latin1') });
      } else if (!this.#stdin.write(chunk)) {
        await drainOrClose(this.#stdin);
      }
    });
    this.#tail = result.catch(() => undefined);
    return result;
  }

  async closeStdin(): Promise<void> {
    await this.#tail;
    if (this.#stdinClosed) return;
    this.#stdinClosed = true;
    if (this.#raw) {
      this.#sandbox.deliver({ t: 'end' });
      return;
    }
    // A server ends on stdin EOF once the requests in flight have their answers. The SDK's stdio
    // transport drops the requests in flight at EOF, so #stdin ends only once they are answered.
    await this.#drainPending();
    this.#stdin.end();
    await this.#finish({ code: 0, signal: null });
  }

  async kill(signal: KillSignal = 'SIGTERM'): Promise<void> {
    if (this.#exited) return;
    if (signal === 'SIGTERM' && this.#raw) {
      this.#sandbox.deliver({ t: 'signal', name: 'SIGTERM' });
      return;
    }
    await this.#finish({ code: null, signal });
  }

  #diagnostic(text: string): void {
    if (!this.stderr.writableEnded) this.stderr.write(`${text}\n`);
  }

  #onEngineEvent(event: EngineEvent): void {
    switch (event.t) {
      case 'out':
        void this.#out(event.id, event.fd, event.chunk);
        break;
      case 'exit':
        void this.#finish({ code: event.code, signal: null });
        break;
      case 'signal-default':
        void this.#finish({ code: null, signal: event.name });
        break;
      case 'register':
        register(this.#registered, event.kind, event.meta);
        break;
      case 'reply':
        this.#reply(event.id, event.payload);
        break;
      case 'ready':
        if (!this.#raw) void this.#serve();
        break;
      default:
        break;
    }
  }

  readonly #drains = new Map<NodeJS.EventEmitter, Promise<void>>();

  async #out(id: number, fd: number, chunk: string): Promise<void> {
    this.#unacked += chunk.length;
    const stream = fd === 2 ? this.stderr : this.stdout;
    if (!stream.writableEnded && !stream.write(Buffer.from(chunk, 'latin1'))) {
      // Writes that find the stream full share one wait for its drain.
      let waiting = this.#drains.get(stream);
      if (!waiting) {
        waiting = drainOrClose(stream, this.exit).finally(() => this.#drains.delete(stream));
        this.#drains.set(stream, waiting);
      }
      await waiting;
    }
    this.#unacked -= chunk.length;
    this.#acked.emit('ack');
    this.#sandbox.deliver({ t: 'result', id, ok: true });
  }

  #reply(id: number, payload: string): void {
    const entry = this.#pending.get(id);
    if (entry === undefined) return;
    this.#pending.delete(id);
    try {
      const parsed = parseUntrusted(payload, LIMITS) as { ok?: unknown; value?: unknown; error?: unknown };
      if (parsed.ok === true) entry.resolve(parsed.value);
      else {
        const error = (parsed.error ?? {}) as { message?: unknown };
        entry.reject(new Error(typeof error.message === 'string' ? error.message : 'the handler failed'));
      }
    } catch (error) {
      entry.reject(error as Error);
    }
  }

  /** Runs a handler inside the sandbox and waits for its answer. */
  #invoke(kind: string, name: string, args: unknown): Promise<unknown> {
    if (this.#exited) return Promise.reject(new Error('the app has stopped'));
    const id = this.#nextId++;
    const answer = new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#sandbox.deliver({ t: 'invoke', id, kind, name, args: JSON.parse(JSON.stringify(args ?? {})) });
    });
    const tracked = answer.then(
      () => undefined,
      () => undefined,
    );
    this.#inflight.add(tracked);
    void tracked.then(() => this.#inflight.delete(tracked));
    return answer;
  }

  async #drainPending(): Promise<void> {
    // Requests already written reach the server first, then their answers are awaited.
    await Promise.race([this.#served, this.exit]);
    await new Promise((resolve) => setImmediate(resolve));
    while (this.#inflight.size > 0 && !this.#exited) {
      await Promise.race([Promise.allSettled([...this.#inflight]), this.exit]);
      // Let the SDK write the responses of the handlers that just settled.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async #serve(): Promise<void> {
    const invoke: Invoke = (kind, name, args) => this.#invoke(kind, name, args);
    // Messages the client sent while the app was starting wait in #stdin and are read now.
    this.#server = serveApp(this.#registered, invoke, this.#stdin, this.stdout);
    this.#markServed();
  }

  async #finish(status: ExitStatus): Promise<void> {
    if (this.#exited) return;
    this.#exited = true;
    for (const entry of this.#pending.values()) entry.reject(new Error('the app has stopped'));
    this.#pending.clear();
    await this.#server?.close().catch(() => undefined);
    await this.#sandbox.dispose();
    this.stdout.end();
    this.stderr.end();
    this.#acked.emit('ack');
    this.#resolveExit(status);
  }
}
