import * as vm from 'node:vm';
import type { Logger, SandboxBackend, SandboxProcess } from '@mcpsandbox/core';
import { childSource } from './child.js';
import {
  createRuntime,
  type EngineEvent,
  type HostMessage,
  type Runtime,
  type RuntimeConfig,
} from './runtime.js';

/** A started child as the sandbox needs it: the contract's process, plus a pid when known. */
export interface LaunchedProcess extends SandboxProcess {
  /** The host pid, when the child is a direct host process (enables the /proc RSS watchdog). */
  readonly pid?: number;
}

/** Starts the locked-down child from a complete argv (`[node, ...flags, '-e', source]`). */
export type Launcher = (argv: readonly string[]) => Promise<LaunchedProcess>;

/**
 * `process`: a locked-down child Node process (the default, for untrusted code).
 * `in-process-trusted`: the host's own process. Not a security boundary: Node's own machinery
 * (rejection tracking, async hooks, loggers) touches the app's objects. For code you trust.
 */
export type Isolation = 'process' | 'in-process-trusted';

export interface SessionOptions {
  readonly runtime: RuntimeConfig;
  readonly isolation: Isolation;
  readonly memoryLimitMb: number;
  readonly maxRssMb: number;
  readonly launcher?: Launcher | undefined;
  readonly hostBackend?: SandboxBackend | undefined;
  readonly nodePath?: string | undefined;
  readonly logger: Logger;
}

/** The session's view of what happened: engine events plus `crash` from the watchdogs. */
export type SessionListener = (event: EngineEvent) => void;

export interface Session {
  start(): Promise<void>;
  deliver(message: HostMessage): void;
  /** Ends the sandbox (SIGKILL for a child). Idempotent. */
  dispose(): Promise<void>;
}

/** Node's permission flag: `--experimental-permission` on 20, `--permission` from 22. */
export function permissionFlag(version = process.versions.node): string {
  const major = Number(version.split('.')[0]);
  return major >= 22 ? '--permission' : '--experimental-permission';
}

/** The child's argv. No `--allow-*` flag: no fs reads or writes, no child processes, workers or addons. */
export function childArgv(options: {
  nodePath: string;
  memoryLimitMb: number;
  allowWasm: boolean;
  version?: string;
}): string[] {
  const argv = [
    options.nodePath,
    permissionFlag(options.version),
    '--no-warnings',
    `--max-old-space-size=${Math.max(16, Math.floor(options.memoryLimitMb))}`,
    // The child's own realm never needs eval: an escape that reaches its Function gets nothing.
    '--disallow-code-generation-from-strings',
  ];
  if (!options.allowWasm) argv.push('--no-expose-wasm');
  argv.push('-e', childSource());
  return argv;
}

// ---------------------------------------------------------------------------------------------
// in-process (trusted)

let inProcessCount = 0;

/**
 * Says why the host process tracks promises, or undefined. With async hooks or an
 * AsyncLocalStorage enabled, Node stores its ids and the store (host objects) as own symbol
 * properties of every promise, those an app creates included: the app would read them. A new
 * context's promise and its reaction show it; hooks installed with `v8.promiseHooks` leave no
 * trace and are not detected.
 */
let probe: { context: vm.Context; script: vm.Script } | undefined;

export function detectPromiseTracking(): string | undefined {
  // One small context for the probe, made once: the answer depends on the hooks of the moment.
  probe ??= {
    context: vm.createContext(Object.create(null), { microtaskMode: 'afterEvaluate' }),
    script: new vm.Script('(() => { const p = Promise.resolve(1); return [p, p.then(() => 0)]; })()'),
  };
  const [promise, derived] = probe.script.runInContext(probe.context, { timeout: 1000 }) as [object, object];
  if (Object.getOwnPropertySymbols(promise).length + Object.getOwnPropertySymbols(derived).length > 0)
    return 'the host process has async hooks or an AsyncLocalStorage enabled (they attach host objects to every promise)';
  return undefined;
}

/** The per-entry check: cheaper, it sees hooks with an init callback and AsyncLocalStorage. */
function quickPromiseTracking(): string | undefined {
  return Object.getOwnPropertySymbols(Promise.resolve()).length > 0
    ? 'the host process enabled async hooks or an AsyncLocalStorage while the app ran'
    : undefined;
}

/** Unhandled rejections of in-process apps in one second before they are all stopped. */
const MAX_REJECTIONS_PER_SECOND = 100;
const liveInProcess = new Set<(reason: string, message: string) => void>();
let rejectionWindow = { start: 0, count: 0 };

// Installed while in-process sandboxes exist: Node would otherwise throw an unhandled sandbox
// rejection as the host's uncaught exception. It never reads the reason. Host promises keep
// Node's default behaviour (rethrown on a later tick). Rejections of app promises are counted:
// each can cost the host a warning when it is handled late, so a flood stops the apps.
const onUnhandledRejection = (reason: unknown, promise: Promise<unknown>) => {
  if (Object.getPrototypeOf(promise) === Promise.prototype) {
    if (process.listenerCount('unhandledRejection') === 1) {
      process.nextTick(() => {
        throw reason;
      });
    }
    return;
  }
  const now = performance.now();
  if (now - rejectionWindow.start > 1000) rejectionWindow = { start: now, count: 0 };
  if (++rejectionWindow.count > MAX_REJECTIONS_PER_SECOND) {
    for (const stop of [...liveInProcess]) {
      stop('rejections', `more than ${MAX_REJECTIONS_PER_SECOND} unhandled rejections in a second`);
    }
  }
};

export function createInProcessSession(options: SessionOptions, listener: SessionListener): Session {
  let runtime: Runtime | undefined;
  let disposed = false;
  const stop = (reason: string, message: string) => {
    if (disposed) return;
    runtime?.dispose();
    listener({ t: 'crash', reason, message });
  };
  const release = () => {
    liveInProcess.delete(stop);
    // Later: Node looks at the rejections of the last entry after the current microtasks, and
    // without a listener it would throw the sandbox's reason (coercing it) in the host.
    setTimeout(() => {
      if (--inProcessCount === 0) process.off('unhandledRejection', onUnhandledRejection);
    }, 1000).unref();
  };
  return {
    async start() {
      const tracking = detectPromiseTracking();
      if (tracking !== undefined) {
        listener({ t: 'crash', reason: 'unsafe-host', message: `in-process-trusted refused: ${tracking}` });
        return;
      }
      if (inProcessCount++ === 0) process.on('unhandledRejection', onUnhandledRejection);
      liveInProcess.add(stop);
      runtime = createRuntime(
        {
          vm,
          setTimeout,
          clearTimeout,
          setImmediate,
          now: () => performance.now(),
          beforeEntry: quickPromiseTracking,
        },
        options.runtime,
        // Host listeners never run inside an entry (no host code with sandbox frames below it).
        (event) =>
          queueMicrotask(() => {
            if (!disposed || event.t === 'crash') listener(event);
          }),
      );
      runtime.start();
    },
    deliver(message) {
      if (!disposed) runtime?.deliver(message);
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      runtime?.dispose();
      if (runtime !== undefined) release();
    },
  };
}
