import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import * as vm from 'node:vm';
import {
  adaptChildProcess,
  type Logger,
  type Sandbox,
  type SandboxBackend,
  SandboxFailureError,
  type SandboxProcess,
} from '@mcpsandbox/core';
import { childSource } from './child.js';
import { LineSplitter } from './lines.js';
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

// ---------------------------------------------------------------------------------------------
// process

const HEARTBEAT_MS = 100;
/** The kernel's cap on the worker's data (RLIMIT_DATA) sits this far above `maxRssMb`. */
const DATA_LIMIT_HEADROOM_MB = 64;

/**
 * Starts `argv` under a kernel limit on its private writable memory (RLIMIT_DATA: the V8 heap
 * and ArrayBuffers alike), set by the shell that then becomes the worker. The RSS watchdog
 * stops the worker at `maxRssMb`; this limit holds even between its polls.
 */
export function withDataLimit(
  argv: readonly string[],
  limitMb: number,
  platform = process.platform,
): string[] {
  // No POSIX shell or rlimits on Windows: the watchdog alone applies there.
  if (platform === 'win32') return [...argv];
  const kib = Math.max(64, Math.floor(limitMb)) * 1024;
  return ['/bin/sh', '-c', 'ulimit -d "$0" && exec "$@"', String(kib), ...argv];
}

/** Resident size in bytes of `pid` and all its descendants, from /proc. */
export async function treeRss(pid: number): Promise<number> {
  let total = 0;
  const queue = [pid];
  for (let seen = 0; queue.length > 0 && seen < 64; seen++) {
    const current = queue.shift() as number;
    try {
      const status = await readFile(`/proc/${current}/status`, 'utf8');
      const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
      if (match) total += Number(match[1]) * 1024;
      const children = await readFile(`/proc/${current}/task/${current}/children`, 'utf8');
      for (const child of children.split(' ')) if (/^\d+$/.test(child)) queue.push(Number(child));
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

export function createProcessSession(options: SessionOptions, listener: SessionListener): Session {
  let child: LaunchedProcess | undefined;
  let hostSandbox: Sandbox | undefined;
  let ended = false;
  let crashed = false;
  let killReason: { reason: string; message: string } | undefined;
  let lastSeen = performance.now();
  let watchdog: NodeJS.Timeout | undefined;
  let stderrTail = '';
  const timeoutMs = options.runtime.timeoutMs;
  const graceMs = Math.max(1000, timeoutMs / 2);
  const rssLimit = options.maxRssMb * 1024 * 1024;

  const crash = (reason: string, message: string) => {
    if (crashed) return;
    crashed = true;
    listener({ t: 'crash', reason, message });
  };

  const kill = (reason: string, message: string) => {
    killReason ??= { reason, message };
    void child?.kill('SIGKILL').catch(() => undefined);
  };

  // Messages for the app before the child is up wait here, in order.
  let early: unknown[] | undefined = [];
  const send = (message: unknown) => {
    if (early !== undefined && message !== null && (message as { t?: unknown }).t !== 'start') {
      early.push(message);
      return;
    }
    if (child === undefined || ended) return;
    child.write(Buffer.from(`${JSON.stringify(message)}\n`)).catch(() => undefined);
  };

  const onEvent = (event: EngineEvent | { t: 'hb'; rss: number }) => {
    lastSeen = performance.now();
    if (event.t === 'hb') {
      // What the worker says of itself counts too (the host's /proc view may not reach it).
      if (event.rss > rssLimit) kill('memory', 'the sandbox process used too much memory');
      return;
    }
    if (event.t === 'crash') {
      crash(event.reason, event.message);
      return;
    }
    listener(event);
  };

  const readStdout = async (stdout: AsyncIterable<Uint8Array>) => {
    const lines = new LineSplitter(options.runtime.maxMessageBytes * 6 + 4096);
    const onLine = (line: string) => {
      const event = validateEvent(line);
      if (event !== undefined) onEvent(event);
    };
    for await (const chunk of stdout) {
      if (!lines.push(chunk, onLine)) {
        kill('protocol', 'the sandbox process broke the protocol');
        return;
      }
    }
  };

  const readStderr = async (stderr: AsyncIterable<Uint8Array>) => {
    for await (const chunk of stderr) {
      const text = Buffer.from(chunk).toString('utf8');
      stderrTail = (stderrTail + text).slice(-4096);
      options.logger.debug(`vm-sandbox child: ${text.trimEnd()}`);
    }
  };

  const watch = (pid: number | undefined) => {
    let lastTick = performance.now();
    let measuring = false;
    watchdog = setInterval(() => {
      if (ended) return;
      const now = performance.now();
      const gap = now - lastTick;
      lastTick = now;
      // The host itself was stalled: the child's lines may wait unread. Judge it afresh.
      if (gap > 250) {
        lastSeen = now;
        return;
      }
      // The vm timeout is advisory (one builtin call can run for long): the wall clock is not.
      if (performance.now() - lastSeen > timeoutMs + graceMs) {
        kill('timeout', `the sandbox process stopped responding for more than ${timeoutMs} ms`);
        return;
      }
      // ArrayBuffers live outside the V8 heap cap: watch the resident size of the launched
      // process and everything under it (inside an OS sandbox the launched process is bwrap,
      // the worker is its descendant).
      if (pid !== undefined && !measuring) {
        measuring = true;
        void treeRss(pid).then(
          (rss) => {
            measuring = false;
            if (rss > rssLimit) kill('memory', 'the sandbox process used too much memory');
          },
          () => {
            measuring = false;
          },
        );
      }
    }, 50);
    watchdog.unref();
  };

  return {
    async start() {
      const nodePath = options.nodePath ?? process.execPath;
      const argv = withDataLimit(
        childArgv({
          nodePath,
          memoryLimitMb: options.memoryLimitMb,
          allowWasm: options.runtime.allowWasm,
        }),
        options.maxRssMb + DATA_LIMIT_HEADROOM_MB,
      );
      try {
        if (options.hostBackend) {
          hostSandbox = await options.hostBackend.create({
            sessionId: `vm-sandbox-${process.pid}-${Date.now()}`,
            env: {},
            ttlMs: 2_147_483_647,
            network: { allow: [] },
          });
          child = await hostSandbox.exec(argv);
        } else {
          child = await (options.launcher ?? spawnChild)(argv);
        }
      } catch (error) {
        await hostSandbox?.close().catch(() => undefined);
        throw new SandboxFailureError('cannot start the sandbox process', {
          cause: error,
          code: 'E_VM_SPAWN',
        });
      }
      const proc = child;
      lastSeen = performance.now();
      void readStdout(proc.stdout).catch(() => kill('protocol', 'cannot read the sandbox process'));
      void readStderr(proc.stderr).catch(() => undefined);
      void proc.exit.then((status) => {
        ended = true;
        if (watchdog) clearInterval(watchdog);
        if (killReason) crash(killReason.reason, killReason.message);
        else if (/heap out of memory|Allocation failed/i.test(stderrTail)) {
          crash('memory', 'the sandbox process ran out of memory');
        } else {
          crash('exited', `the sandbox process exited (${status.signal ?? `code ${status.code}`})`);
        }
        void hostSandbox?.close().catch(() => undefined);
      });
      watch(proc.pid);
      send({ t: 'start', config: options.runtime, heartbeatMs: HEARTBEAT_MS });
      const queued = early ?? [];
      early = undefined;
      for (const message of queued) send(message);
    },
    deliver(message) {
      send(message);
    },
    async dispose() {
      if (child === undefined) return;
      killReason ??= { reason: 'disposed', message: 'the sandbox was disposed' };
      crashed = true;
      if (!ended) await child.kill('SIGKILL').catch(() => undefined);
      await child.exit;
      await hostSandbox?.close().catch(() => undefined);
    },
  };
}

/** Validates one line from the child: it is untrusted after an escape. */
function validateEvent(line: string): EngineEvent | { t: 'hb'; rss: number } | undefined {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const s = (key: string) => typeof value[key] === 'string';
  const n = (key: string) => typeof value[key] === 'number';
  switch (value.t) {
    case 'hb':
      return n('rss') ? (value as { t: 'hb'; rss: number }) : undefined;
    case 'log':
      return s('level') && s('text')
        ? { t: 'log', level: value.level as string, text: value.text as string }
        : undefined;
    case 'log-limit':
    case 'error-limit':
    case 'ready':
    case 'idle':
      return { t: value.t };
    case 'error':
      return s('name') && s('message')
        ? { t: 'error', name: value.name as string, message: value.message as string }
        : undefined;
    case 'call':
      return n('id') && s('name') && s('args')
        ? { t: 'call', id: value.id as number, name: value.name as string, args: value.args as string }
        : undefined;
    case 'out':
      return n('id') && n('fd') && s('chunk')
        ? { t: 'out', id: value.id as number, fd: value.fd as number, chunk: value.chunk as string }
        : undefined;
    case 'register':
      return s('kind') && s('meta')
        ? { t: 'register', kind: value.kind as string, meta: value.meta as string }
        : undefined;
    case 'reply':
      return n('id') && s('payload')
        ? { t: 'reply', id: value.id as number, payload: value.payload as string }
        : undefined;
    case 'exit':
      return n('code') ? { t: 'exit', code: value.code as number } : undefined;
    case 'signal-default':
      return s('name') ? { t: 'signal-default', name: value.name as string } : undefined;
    case 'crash':
      return s('reason') && s('message')
        ? { t: 'crash', reason: value.reason as string, message: value.message as string }
        : undefined;
    default:
      return undefined;
  }
}

/** The default launcher: a plain child with an empty environment and piped stdio. */
export async function spawnChild(argv: readonly string[]): Promise<LaunchedProcess> {
  const [file, ...args] = argv;
  if (file === undefined) throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
  const child = spawn(file, args, { env: {}, stdio: ['pipe', 'pipe', 'pipe'] });
  await once(child, 'spawn');
  return adaptChildProcess(child);
}
