/**
 * The host side of one vm context: creates it, runs the bootstrap and the app, implements the
 * channel, timers and message pumping. It runs in the host process (isolation `in-process-trusted`) or
 * in the locked-down child (isolation `process`); for the child its source text is sent as part
 * of `node -e`, so it must stay self-contained (no imports, nothing from module scope).
 *
 * Rules it keeps: it never reads a property of, coerces, or awaits a sandbox value; every entry
 * into the context is a `runInContext` with a timeout and `displayErrors: false`; whatever an
 * entry throws is dropped unread.
 */
import type * as VmModule from 'node:vm';
import type { Budgets } from './budgets.js';

/** With the budgets of gate.ts, which the parent enforces again. */
export interface RuntimeConfig extends Budgets {
  /** The bootstrap function's source text (compiled inside the context). */
  readonly bootstrapSource: string;
  /** JSON text of the {@link BootstrapConfig}. */
  readonly bootstrapConfig: string;
  /** The app, already checked and wrapped as `__mcpsbx.main((async function () {...}))`. */
  readonly mainSource: string;
  readonly filename: string;
  readonly helperSources: readonly string[];
  readonly timeoutMs: number;
  readonly allowCodeGeneration: boolean;
  readonly allowWasm: boolean;
  readonly maxMessageBytes: number;
  readonly maxTimers: number;
}

/** What the sandbox says to its host; every field is a primitive. */
export type EngineEvent =
  | { t: 'log'; level: string; text: string }
  | { t: 'log-limit' }
  | { t: 'error'; name: string; message: string }
  | { t: 'error-limit' }
  | { t: 'call'; id: number; name: string; args: string }
  | { t: 'out'; id: number; fd: number; chunk: string }
  | { t: 'register'; kind: string; meta: string }
  | { t: 'reply'; id: number; payload: string }
  | { t: 'exit'; code: number }
  | { t: 'signal-default'; name: string }
  | { t: 'ready' }
  | { t: 'idle' }
  | { t: 'crash'; reason: string; message: string };

/** What the host says to the sandbox. */
export type HostMessage =
  | { t: 'result'; id: number; ok: boolean; v?: string; e?: { name: string; message: string } }
  | { t: 'invoke'; id: number; kind: string; name: string; args: unknown }
  | { t: 'data'; chunk: string }
  | { t: 'end' }
  | { t: 'signal'; name: string };

export interface Runtime {
  /** Runs the bootstrap and the app's top level. Events report the outcome. */
  start(): void;
  deliver(message: HostMessage): void;
  /** An app error seen outside the channel (an unhandled rejection): counted like the others. */
  appError(name: string, message: string): void;
  /** Stops everything; no entry happens after this. */
  dispose(): void;
}

export interface RuntimeDeps {
  readonly vm: typeof VmModule;
  readonly setTimeout: typeof setTimeout;
  readonly clearTimeout: typeof clearTimeout;
  readonly setImmediate: typeof setImmediate;
  readonly now: () => number;
  /** Checked before every entry; a reason stops the app (`unsafe-host`). */
  readonly beforeEntry?: () => string | undefined;
}

export function createRuntime(
  deps: RuntimeDeps,
  config: RuntimeConfig,
  emit: (event: EngineEvent) => void,
): Runtime {
  const { vm } = deps;
  const inbox: string[] = [];
  const timers = new Map<number, { handle: ReturnType<typeof setTimeout>; ms: number; repeat: boolean }>();
  const pendingCalls = new Set<number>();
  // Calls to host functions among them (the rest are outputs).
  const hostCalls = new Map<number, number>();
  let hostCallBytes = 0;
  // Output the host has not taken yet: an app that writes without awaiting is refused past this.
  const outSizes = new Map<number, number>();
  let outBytes = 0;
  let nextId = 1;
  let dead = false;
  let entering = false;
  let mainDone = false;
  let keepalive = false;
  let idleSent = false;
  let logBytes = 0;
  let logEvents = 0;
  let logLimitSent = false;
  let errorEvents = 0;
  let errorBytes = 0;
  let errorLimitSent = false;
  let registrations = 0;
  let registrationBytes = 0;
  let context: VmModule.Context | undefined;
  let pumpScript: VmModule.Script | undefined;
  let pumpQueued = false;

  /** Drops everything the app could still run; false when it was already gone. */
  const teardown = (): boolean => {
    if (dead) return false;
    dead = true;
    for (const timer of timers.values()) deps.clearTimeout(timer.handle);
    timers.clear();
    inbox.length = 0;
    context = undefined;
    pumpScript = undefined;
    return true;
  };
  const die = (reason: string, message: string) => {
    if (teardown()) emit({ t: 'crash', reason, message });
  };

  const str = (value: unknown, max: number): string | undefined =>
    typeof value === 'string' && value.length <= max ? value : undefined;

  // Errors and logs have budgets of events and of text: an empty line is not free.
  const reportError = (name: string, message: string) => {
    if (dead) return;
    const size = name.length + message.length;
    if (errorEvents >= config.maxErrorEvents || errorBytes + size > config.maxErrorBytes) {
      if (!errorLimitSent) {
        errorLimitSent = true;
        emit({ t: 'error-limit' });
      }
      return;
    }
    errorEvents++;
    errorBytes += size;
    emit({ t: 'error', name, message });
  };

  // The one function the context can call. Only primitives in, only primitives out.
  const channel = (kind: unknown, a: unknown, b: unknown): string | number | undefined => {
    if (dead) return -1;
    try {
      switch (kind) {
        case 'pull':
          return inbox.shift() ?? '';
        case 'log': {
          const level = str(a, 16);
          if (level === undefined || typeof b !== 'string') return -1;
          if (logBytes >= config.maxLogBytes || logEvents >= config.maxLogEvents) {
            if (!logLimitSent) {
              logLimitSent = true;
              emit({ t: 'log-limit' });
            }
            return -1;
          }
          const room = config.maxLogBytes - logBytes;
          const text = b.length > room ? b.slice(0, room) : b;
          logBytes += text.length;
          logEvents++;
          emit({ t: 'log', level, text });
          return 0;
        }
        case 'error': {
          const text = str(a, 65536);
          if (text === undefined) return -1;
          let name = 'Error';
          let message = '';
          try {
            const parsed = JSON.parse(text) as { name?: unknown; message?: unknown };
            if (typeof parsed.name === 'string') name = parsed.name.slice(0, 200);
            if (typeof parsed.message === 'string') message = parsed.message.slice(0, 10000);
          } catch {
            // keep the defaults
          }
          reportError(name, message);
          return 0;
        }
        case 'call':
        case 'out': {
          const payload = str(b, config.maxMessageBytes);
          if (payload === undefined) return -1;
          if (
            kind === 'call' &&
            (hostCalls.size >= config.maxCallsInFlight ||
              hostCallBytes + payload.length > config.maxCallBytesInFlight)
          )
            return -2;
          const id = nextId++;
          if (kind === 'call') {
            const name = str(a, 256);
            if (name === undefined) return -1;
            pendingCalls.add(id);
            hostCalls.set(id, payload.length);
            hostCallBytes += payload.length;
            emit({ t: 'call', id, name, args: payload });
          } else {
            if (a !== 1 && a !== 2) return -1;
            if (outBytes + payload.length > config.maxOutBytes) return -1;
            outBytes += payload.length;
            outSizes.set(id, payload.length);
            pendingCalls.add(id);
            emit({ t: 'out', id, fd: a, chunk: payload });
          }
          return id;
        }
        case 'register': {
          const what = str(a, 16);
          const meta = str(b, config.maxMessageBytes);
          if (what === undefined || meta === undefined) return -1;
          if (
            registrations >= config.maxRegistrations ||
            registrationBytes + meta.length > config.maxRegistrationBytes
          )
            return -2;
          registrations++;
          registrationBytes += meta.length;
          emit({ t: 'register', kind: what, meta });
          return 0;
        }
        case 'reply': {
          const payload = str(b, config.maxMessageBytes);
          if (typeof a !== 'number' || payload === undefined) return -1;
          emit({ t: 'reply', id: a, payload });
          return 0;
        }
        case 'timer': {
          if (typeof a !== 'number' || timers.size >= config.maxTimers) return -1;
          const ms = Math.min(Math.max(Number.isFinite(a) ? a : 0, 0), 2_147_483_647);
          const id = nextId++;
          const repeat = b === 1;
          const fire = () => {
            const timer = timers.get(id);
            if (timer === undefined) return;
            if (timer.repeat) timer.handle = deps.setTimeout(fire, Math.max(ms, 1));
            else timers.delete(id);
            enqueue(JSON.stringify({ t: 'timer', id }));
          };
          timers.set(id, { handle: deps.setTimeout(fire, ms), ms, repeat });
          return id;
        }
        case 'clear': {
          const timer = typeof a === 'number' ? timers.get(a) : undefined;
          if (timer !== undefined && typeof a === 'number') {
            deps.clearTimeout(timer.handle);
            timers.delete(a);
          }
          return 0;
        }
        case 'keepalive':
          keepalive = a === 1;
          return 0;
        case 'main-done':
          if (!mainDone) {
            mainDone = true;
            emit({ t: 'ready' });
          }
          return 0;
        case 'exit':
          emit({ t: 'exit', code: typeof a === 'number' && Number.isInteger(a) ? a & 0xff : 1 });
          return 0;
        case 'signal-default': {
          const name = str(a, 16);
          if (name !== undefined) emit({ t: 'signal-default', name });
          return 0;
        }
        default:
          return -1;
      }
    } catch {
      return -1;
    }
  };

  const runOptions = { timeout: config.timeoutMs, displayErrors: false, breakOnSigint: false };

  const enter = (script: VmModule.Script): void => {
    if (dead || context === undefined) return;
    const unsafe = deps.beforeEntry?.();
    if (unsafe !== undefined) {
      die('unsafe-host', unsafe);
      return;
    }
    entering = true;
    const started = deps.now();
    try {
      script.runInContext(context, runOptions);
    } catch {
      // Never read what was thrown: it may be a sandbox object with getters, or a Proxy.
      const elapsed = deps.now() - started;
      entering = false;
      if (elapsed >= config.timeoutMs * 0.9) die('timeout', `the app ran longer than ${config.timeoutMs} ms`);
      else die('internal', 'an entry into the sandbox failed');
      return;
    }
    entering = false;
    checkIdle();
  };

  const checkIdle = () => {
    if (dead || !mainDone || idleSent) return;
    if (pendingCalls.size === 0 && timers.size === 0 && !keepalive && inbox.length === 0) {
      idleSent = true;
      emit({ t: 'idle' });
    }
  };

  const drain = () => {
    pumpQueued = false;
    while (!dead && inbox.length > 0 && pumpScript !== undefined) enter(pumpScript);
  };

  const enqueue = (text: string) => {
    if (dead) return;
    idleSent = false;
    inbox.push(text);
    if (entering) {
      // Never re-enter the context from inside an entry; run right after it.
      if (!pumpQueued) {
        pumpQueued = true;
        deps.setImmediate(drain);
      }
      return;
    }
    drain();
  };

  return {
    start() {
      if (dead || context !== undefined) return;
      try {
        const contextObject = Object.create(null) as Record<string, unknown>;
        const created = vm.createContext(contextObject, {
          name: 'mcpsandbox',
          codeGeneration: { strings: config.allowCodeGeneration, wasm: config.allowWasm },
          microtaskMode: 'afterEvaluate',
        });
        // Intrinsics taken before user code runs, for errors the host must throw into the context.
        const SandboxTypeError = vm.runInContext('TypeError', created, runOptions) as ErrorConstructor;
        const rejectImport = (): never => {
          throw new SandboxTypeError('import() is not available in this sandbox');
        };
        contextObject.__mcpsbx_ch = channel;
        const helpersScript = `[${config.helperSources.map((source) => `(${source})`).join(',\n')}]`;
        const bootstrap = new vm.Script(
          `'use strict';\nconst __mcpsbx = (${config.bootstrapSource})(${JSON.stringify(config.bootstrapConfig)}, ${helpersScript});`,
          { filename: 'mcpsandbox:bootstrap', importModuleDynamically: rejectImport as never },
        );
        bootstrap.runInContext(created, runOptions);
        if (!config.allowWasm) vm.runInContext('delete globalThis.WebAssembly', created, runOptions);
        context = created;
        pumpScript = new vm.Script('__mcpsbx.pump()', {
          filename: 'mcpsandbox:pump',
          importModuleDynamically: rejectImport as never,
        });
        let main: VmModule.Script;
        try {
          main = new vm.Script(config.mainSource, {
            filename: config.filename,
            importModuleDynamically: rejectImport as never,
          });
        } catch (error) {
          // A compile error is a host-realm SyntaxError: safe to read.
          const message = error instanceof Error ? error.message : 'cannot compile the app';
          emit({ t: 'error', name: 'SyntaxError', message });
          die('syntax', message);
          return;
        }
        enter(main);
        if (!dead && inbox.length > 0) drain();
      } catch (error) {
        die(
          'internal',
          error instanceof Error ? `cannot start the sandbox: ${error.message}` : 'cannot start the sandbox',
        );
      }
    },
    deliver(message) {
      if (dead) return;
      if (message.t === 'result') {
        pendingCalls.delete(message.id);
        hostCallBytes -= hostCalls.get(message.id) ?? 0;
        hostCalls.delete(message.id);
        outBytes -= outSizes.get(message.id) ?? 0;
        outSizes.delete(message.id);
      }
      if (message.t === 'end') keepalive = false;
      enqueue(JSON.stringify(message));
      checkIdle();
    },
    appError(name, message) {
      reportError(name, message);
    },
    dispose() {
      teardown();
    },
  };
}
