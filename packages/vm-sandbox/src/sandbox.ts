import { EventEmitter } from 'node:events';
import { type Logger, type SandboxBackend, silentLogger, UsageError } from '@mcpsandbox/core';
import { type Budgets, DEFAULT_BUDGETS } from './budgets.js';
import { bootstrapSource } from './child.js';
import type { BootstrapConfig } from './context-bootstrap.js';
import { type CopyLimits, describeHostError, parseUntrusted, serializeForSandbox } from './copy.js';
import { EventGate } from './gate.js';
import { prepareApp, prepareHelper } from './prepare.js';
import { createProcessSession } from './process-session.js';
import type { EngineEvent, HostMessage, RuntimeConfig } from './runtime.js';
import {
  createInProcessSession,
  detectPromiseTracking,
  type Isolation,
  type Launcher,
  type Session,
} from './session.js';

export type LogLevel = 'log' | 'info' | 'warn' | 'error' | 'debug';

/** Why a sandbox stopped before finishing. */
export type CrashReason =
  | 'timeout'
  | 'memory'
  | 'syntax'
  | 'exited'
  | 'protocol'
  | 'disposed'
  | 'internal'
  /** In-process: the host enabled async hooks or an AsyncLocalStorage. */
  | 'unsafe-host'
  /** In-process: more unhandled rejections than the host's budget. */
  | 'rejections'
  | (string & {});

export interface MCPAppSandboxOptions {
  /** The app: a script body (top-level `await` works; `import` does not). */
  readonly code: string;
  /** Shown in diagnostics. */
  readonly filename?: string;
  /** CPU budget in ms of every entry into the sandbox (top level, each callback). Default 2000. */
  readonly timeout?: number;
  /**
   * Globals for the app. Data is copied (JSON); functions are rebuilt inside the sandbox from
   * their source text, so they cannot close over host variables. Use `expose` for host powers.
   */
  readonly globals?: Readonly<Record<string, unknown>>;
  /**
   * `process` (default): a locked-down child Node process. `in-process-trusted`: the host's own
   * process, faster and not a security boundary (for code you trust; see the README).
   */
  readonly isolation?: Isolation;
  /** Heap cap of the child in MiB (process isolation). Default 128. */
  readonly memoryLimitMb?: number;
  /** Resident-size cap of the child in MiB, for memory outside the heap. Default heap + 128. */
  readonly maxRssMb?: number;
  /** Console text passed on before the rest is dropped (characters). Default 1 MiB. */
  readonly maxLogBytes?: number;
  /** Console lines passed on before the rest is dropped. Default 10,000. */
  readonly maxLogEvents?: number;
  /** App errors (`error` events) passed on before the rest is dropped. Default 1000 (and 1 MiB of text). */
  readonly maxErrorEvents?: number;
  /** Calls to exposed functions waiting for their answer; past it a call rejects in the app. Default 64. */
  readonly maxCallsInFlight?: number;
  /** Largest value (as JSON text) that may cross the boundary. Default 4 MiB. */
  readonly maxMessageBytes?: number;
  /** Deepest nesting of a value that crosses. Default 64. */
  readonly maxDepth?: number;
  /** Allow `eval`/`new Function` inside the sandbox. Needs process isolation. Default false. */
  readonly allowCodeGeneration?: boolean;
  /** Allow WebAssembly inside the sandbox. Default false. */
  readonly allowWasm?: boolean;
  /** Starts the child from its argv instead of a plain `child_process.spawn`. */
  readonly launcher?: Launcher;
  /** Runs the child inside this backend's sandbox (e.g. the `local` OS sandbox). */
  readonly hostBackend?: SandboxBackend;
  /** The `node` binary for the child (it must exist inside a hostBackend too). Default: this process's. */
  readonly nodePath?: string;
  readonly logger?: Logger;
}

/** @internal Options the `vm` backend uses on top of the public ones. */
export interface InternalSandboxOptions extends MCPAppSandboxOptions {
  readonly api?: 'app' | 'mcp' | 'raw';
  readonly env?: Readonly<Record<string, string>>;
  readonly argv?: readonly string[];
  /** Receives the engine events the app API does not cover (register, reply, out, exit...). */
  readonly onEngineEvent?: (event: EngineEvent) => void;
  /** Keep running after the app goes idle (a server). */
  readonly stayAlive?: boolean;
  readonly budgets?: Partial<Budgets>;
}

export interface LogEntry {
  readonly level: LogLevel;
  readonly message: string;
}

export interface SandboxAppError {
  readonly name: string;
  readonly message: string;
}

export interface CrashInfo {
  readonly reason: CrashReason;
  readonly message: string;
}

export type RunResult =
  | { readonly status: 'finished' }
  | { readonly status: 'crashed'; readonly crash: CrashInfo };

/** Host functions the app may call; they may be async. Arguments arrive as copied JSON data. */
export type ExposedFunction = (...args: never[]) => unknown;

export interface MCPAppSandboxEvents {
  log: [entry: LogEntry];
  /** An uncaught error or unhandled rejection in the app (name and message only). */
  error: [error: SandboxAppError];
  finished: [];
  crash: [info: CrashInfo];
  'api-call': [name: string, args: unknown[], result: unknown];
  'api-error': [name: string, args: unknown[], error: unknown];
}

const RESERVED = new Set([
  'console',
  'setTimeout',
  'setInterval',
  'clearTimeout',
  'clearInterval',
  'queueMicrotask',
  'mcp',
  'io',
  'globalThis',
  '__mcpsbx',
]);
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Runs an untrusted JavaScript app in a hardened node:vm context, by default inside a
 * locked-down child Node process. Host functions are reached only through `expose`.
 */
export class MCPAppSandbox extends EventEmitter<MCPAppSandboxEvents> {
  readonly isolation: Isolation;
  readonly #options: InternalSandboxOptions;
  readonly #exposed = new Map<string, ExposedFunction>();
  readonly #limits: CopyLimits;
  readonly #logger: Logger;
  readonly #budgets: Budgets;
  #gate: EventGate | undefined;
  #session: Session | undefined;
  #run: Promise<RunResult> | undefined;
  #settle: ((result: RunResult) => void) | undefined;
  #done = false;

  constructor(options: MCPAppSandboxOptions) {
    super();
    const internal = options as InternalSandboxOptions;
    if (typeof options.code !== 'string') throw new UsageError('code must be a string');
    this.isolation = options.isolation ?? 'process';
    if ((this.isolation as string) === 'in-process') {
      throw new UsageError(
        `isolation 'in-process' is now 'in-process-trusted': it is not a security boundary. Use 'process' for untrusted code`,
      );
    }
    if (this.isolation !== 'process' && this.isolation !== 'in-process-trusted') {
      throw new UsageError(`isolation must be 'process' or 'in-process-trusted'`);
    }
    if (options.allowCodeGeneration && this.isolation === 'in-process-trusted') {
      // In-process, code generation would let an import() rejection hand out the host's Function.
      throw new UsageError('allowCodeGeneration needs isolation: "process"');
    }
    if (this.isolation === 'in-process-trusted') {
      const tracking = detectPromiseTracking();
      if (tracking !== undefined)
        throw new UsageError(`isolation 'in-process-trusted' refused: ${tracking}. Use 'process'`);
    }
    this.#options = internal;
    this.#logger = options.logger ?? silentLogger;
    this.#limits = { maxBytes: options.maxMessageBytes ?? 4 * 1024 * 1024, maxDepth: options.maxDepth ?? 64 };
    this.#budgets = {
      ...DEFAULT_BUDGETS,
      ...internal.budgets,
      ...defined({
        maxLogBytes: options.maxLogBytes,
        maxLogEvents: options.maxLogEvents,
        maxErrorEvents: options.maxErrorEvents,
        maxCallsInFlight: options.maxCallsInFlight,
      }),
    };
  }

  /** Makes `fn` callable from the app as a global `name(...)` that returns a promise. */
  expose(name: string, fn: ExposedFunction): this {
    if (this.#run) throw new UsageError('expose() must be called before run()');
    if (!IDENTIFIER.test(name) || RESERVED.has(name))
      throw new UsageError(`cannot expose ${JSON.stringify(name)}`);
    if (typeof fn !== 'function') throw new UsageError(`expose(${name}): not a function`);
    this.#exposed.set(name, fn);
    return this;
  }

  /** Starts the app; resolves when it has nothing left to do, or when it crashed. Never rejects. */
  run(): Promise<RunResult> {
    this.#run ??= this.#start();
    return this.#run;
  }

  /** Stops the app and frees the context or child process. Idempotent. */
  async dispose(): Promise<void> {
    const session = this.#session;
    this.#finish(
      { status: 'crashed', crash: { reason: 'disposed', message: 'the sandbox was disposed' } },
      false,
    );
    await session?.dispose();
  }

  /** @internal Sends a message into the sandbox (the vm backend's invocations and stdin). */
  deliver(message: HostMessage): void {
    if (this.#done) return;
    if (message.t === 'result') this.#gate?.settled(message.id);
    this.#session?.deliver(message);
  }

  async #start(): Promise<RunResult> {
    const options = this.#options;
    let config: RuntimeConfig;
    try {
      config = this.#config();
    } catch (error) {
      const message = error instanceof Error ? error.message : 'invalid app';
      this.#emitError({ name: 'SyntaxError', message });
      const result: RunResult = { status: 'crashed', crash: { reason: 'syntax', message } };
      this.#done = true;
      this.emit('crash', result.crash);
      return result;
    }
    const result = new Promise<RunResult>((resolve) => {
      this.#settle = resolve;
    });
    const sessionOptions = {
      runtime: config,
      isolation: this.isolation,
      memoryLimitMb: options.memoryLimitMb ?? 128,
      maxRssMb: options.maxRssMb ?? (options.memoryLimitMb ?? 128) + 128,
      launcher: options.launcher,
      hostBackend: options.hostBackend,
      nodePath: options.nodePath,
      logger: this.#logger,
    };
    this.#gate = new EventGate(options.api ?? 'app', new Set(this.#exposed.keys()), this.#budgets);
    const listener = (event: EngineEvent) => this.#onEvent(event);
    this.#session =
      this.isolation === 'process'
        ? createProcessSession(sessionOptions, listener)
        : createInProcessSession(sessionOptions, listener);
    try {
      await this.#session.start();
    } catch (error) {
      const message = error instanceof Error ? error.message : 'cannot start';
      this.#logger.error(`vm-sandbox: ${message}`);
      this.#finish({ status: 'crashed', crash: { reason: 'internal', message } });
    }
    return result;
  }

  #config(): RuntimeConfig {
    const options = this.#options;
    const data: Record<string, unknown> = {};
    const helperNames: string[] = [];
    const helperSources: string[] = [];
    for (const [key, value] of Object.entries(options.globals ?? {})) {
      if (!IDENTIFIER.test(key) || RESERVED.has(key) || this.#exposed.has(key)) {
        throw new UsageError(`cannot define global ${JSON.stringify(key)}`);
      }
      if (typeof value === 'function') {
        helperNames.push(key);
        helperSources.push(prepareHelper(key, value as ExposedFunction));
      } else {
        data[key] = value;
      }
    }
    const budgets = this.#budgets;
    const bootstrap: BootstrapConfig = {
      exposed: [...this.#exposed.keys()],
      globals: serializeForSandbox(data, this.#limits) ?? '{}',
      helperNames,
      api: options.api ?? 'app',
      env: { ...options.env },
      argv: [...(options.argv ?? [])],
      maxMessageBytes: this.#limits.maxBytes,
      maxCallsInFlight: budgets.maxCallsInFlight,
      maxCallBytesInFlight: budgets.maxCallBytesInFlight,
      allowCodeGeneration: options.allowCodeGeneration ?? false,
      inProcess: this.isolation === 'in-process-trusted',
    };
    return {
      bootstrapSource: bootstrapSource(),
      bootstrapConfig: JSON.stringify(bootstrap),
      mainSource: prepareApp(options.code),
      filename: options.filename ?? 'app.js',
      helperSources,
      timeoutMs: options.timeout ?? 2000,
      allowCodeGeneration: options.allowCodeGeneration ?? false,
      allowWasm: options.allowWasm ?? false,
      maxMessageBytes: this.#limits.maxBytes,
      maxTimers: 10_000,
      ...budgets,
    };
  }

  #onEvent(event: EngineEvent): void {
    if (this.#done && event.t !== 'crash') return;
    const verdict = this.#gate?.admit(event);
    if (verdict !== undefined && !verdict.ok) {
      this.#finish({
        status: 'crashed',
        crash: { reason: 'protocol', message: `the sandbox broke the protocol: ${verdict.why}` },
      });
      return;
    }
    if (verdict !== undefined && !verdict.pass) return;
    switch (event.t) {
      case 'log':
        this.emit('log', { level: toLevel(event.level), message: event.text });
        break;
      case 'log-limit':
        this.emit('log', {
          level: 'warn',
          message: '[vm-sandbox: log limit reached, further output dropped]',
        });
        break;
      case 'error':
        this.#emitError({ name: event.name, message: event.message });
        break;
      case 'error-limit':
        this.emit('log', {
          level: 'warn',
          message: '[vm-sandbox: error limit reached, further app errors dropped]',
        });
        break;
      case 'call':
        void this.#call(event.id, event.name, event.args);
        break;
      case 'idle':
        if (!this.#options.stayAlive) this.#finish({ status: 'finished' });
        break;
      case 'crash':
        this.#finish({ status: 'crashed', crash: { reason: event.reason, message: event.message } });
        break;
      default:
        break;
    }
    this.#options.onEngineEvent?.(event);
  }

  async #call(id: number, name: string, argsJson: string): Promise<void> {
    const fn = this.#exposed.get(name);
    let args: unknown[] = [];
    try {
      if (fn === undefined) throw new TypeError(`${name} is not exposed`);
      const parsed = parseUntrusted(argsJson, this.#limits);
      if (!Array.isArray(parsed)) throw new TypeError('arguments must be an array');
      args = parsed;
      const result = await (fn as (...a: unknown[]) => unknown)(...args);
      const v = serializeForSandbox(result, this.#limits);
      this.deliver(v === undefined ? { t: 'result', id, ok: true } : { t: 'result', id, ok: true, v });
      this.emit('api-call', name, args, result);
    } catch (error) {
      this.deliver({ t: 'result', id, ok: false, e: describeHostError(error) });
      this.emit('api-error', name, args, error);
    }
  }

  #emitError(error: SandboxAppError): void {
    // An EventEmitter throws on an unheard `error`: an app error must never throw in the host.
    if (this.listenerCount('error') > 0) this.emit('error', error);
    else this.#logger.warn(`vm-sandbox: app error: ${error.name}: ${error.message}`);
  }

  #finish(result: RunResult, emit = true): void {
    if (this.#done) return;
    this.#done = true;
    if (emit) {
      if (result.status === 'finished') this.emit('finished');
      else this.emit('crash', result.crash);
    }
    this.#settle?.(result);
    // A finished or crashed app needs its context or child no more.
    void this.#session?.dispose();
  }
}

function defined<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function toLevel(level: string): LogLevel {
  return level === 'info' || level === 'warn' || level === 'error' || level === 'debug' ? level : 'log';
}

/**
 * Starts `code` in a new sandbox that exposes nothing. The run begins on the next microtask, so
 * listeners attached right away see every event; `sandbox.run()` returns the same run's result.
 */
export function launchMCPApp(code: string, options: Omit<MCPAppSandboxOptions, 'code'> = {}): MCPAppSandbox {
  const sandbox = new MCPAppSandbox({ ...options, code });
  queueMicrotask(() => void sandbox.run());
  return sandbox;
}
