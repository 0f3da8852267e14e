/**
 * The default isolation (`process`): the app runs in a locked-down child Node process that speaks
 * JSON lines with the host, watched for its wall clock, its memory and its protocol.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { adaptChildProcess, type Sandbox, SandboxFailureError } from '@mcpsandbox/core';
import { LineSplitter } from './lines.js';
import type { EngineEvent, HostMessage } from './runtime.js';
import {
  childArgv,
  type LaunchedProcess,
  type Session,
  type SessionListener,
  type SessionOptions,
} from './session.js';

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

type ChildEvent = EngineEvent | { t: 'hb'; rss: number };

/** A locked-down child Node process, optionally inside a host backend's sandbox, with its watchdogs. */
class ProcessSession implements Session {
  readonly #options: SessionOptions;
  readonly #listener: SessionListener;
  readonly #timeoutMs: number;
  readonly #graceMs: number;
  readonly #rssLimit: number;
  #child: LaunchedProcess | undefined;
  #hostSandbox: Sandbox | undefined;
  #ended = false;
  #crashed = false;
  #killReason: { reason: string; message: string } | undefined;
  #lastSeen = performance.now();
  #watchdog: NodeJS.Timeout | undefined;
  #stderrTail = '';
  /** Messages for the app before the child is up wait here, in order. */
  #early: unknown[] | undefined = [];

  constructor(options: SessionOptions, listener: SessionListener) {
    this.#options = options;
    this.#listener = listener;
    this.#timeoutMs = options.runtime.timeoutMs;
    this.#graceMs = Math.max(1000, this.#timeoutMs / 2);
    this.#rssLimit = options.maxRssMb * 1024 * 1024;
  }

  async start(): Promise<void> {
    const proc = await this.#launch();
    this.#child = proc;
    this.#lastSeen = performance.now();
    void this.#readStdout(proc.stdout).catch(() => this.#kill('protocol', 'cannot read the sandbox process'));
    void this.#readStderr(proc.stderr).catch(() => undefined);
    void proc.exit.then((status) => {
      this.#ended = true;
      if (this.#watchdog) clearInterval(this.#watchdog);
      const killed = this.#killReason;
      if (killed) this.#crash(killed.reason, killed.message);
      else if (/heap out of memory|Allocation failed/i.test(this.#stderrTail)) {
        this.#crash('memory', 'the sandbox process ran out of memory');
      } else {
        this.#crash('exited', `the sandbox process exited (${status.signal ?? `code ${status.code}`})`);
      }
      void this.#hostSandbox?.close().catch(() => undefined);
    });
    this.#watch(proc.pid);
    this.#send({ t: 'start', config: this.#options.runtime, heartbeatMs: HEARTBEAT_MS });
    const queued = this.#early ?? [];
    this.#early = undefined;
    for (const message of queued) this.#send(message);
  }

  deliver(message: HostMessage): void {
    this.#send(message);
  }

  async dispose(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    this.#killReason ??= { reason: 'disposed', message: 'the sandbox was disposed' };
    this.#crashed = true;
    if (!this.#ended) await child.kill('SIGKILL').catch(() => undefined);
    await child.exit;
    await this.#hostSandbox?.close().catch(() => undefined);
  }

  /** The child, started under its data limit, in the host backend's sandbox when there is one. */
  async #launch(): Promise<LaunchedProcess> {
    const options = this.#options;
    const argv = withDataLimit(
      childArgv({
        nodePath: options.nodePath ?? process.execPath,
        memoryLimitMb: options.memoryLimitMb,
        allowWasm: options.runtime.allowWasm,
      }),
      options.maxRssMb + DATA_LIMIT_HEADROOM_MB,
    );
    try {
      if (!options.hostBackend) return await (options.launcher ?? spawnChild)(argv);
      this.#hostSandbox = await options.hostBackend.create({
        sessionId: `vm-sandbox-${process.pid}-${Date.now()}`,
        env: {},
        ttlMs: 2_147_483_647,
        network: { allow: [] },
      });
      return await this.#hostSandbox.exec(argv);
    } catch (error) {
      await this.#hostSandbox?.close().catch(() => undefined);
      throw new SandboxFailureError('cannot start the sandbox process', { cause: error, code: 'E_VM_SPAWN' });
    }
  }

  #crash(reason: string, message: string): void {
    if (this.#crashed) return;
    this.#crashed = true;
    this.#listener({ t: 'crash', reason, message });
  }

  #kill(reason: string, message: string): void {
    this.#killReason ??= { reason, message };
    void this.#child?.kill('SIGKILL').catch(() => undefined);
  }

  #send(message: unknown): void {
    if (this.#early !== undefined && message !== null && (message as { t?: unknown }).t !== 'start') {
      this.#early.push(message);
      return;
    }
    if (this.#child === undefined || this.#ended) return;
    this.#child.write(Buffer.from(`${JSON.stringify(message)}\n`)).catch(() => undefined);
  }

  #onEvent(event: ChildEvent): void {
    this.#lastSeen = performance.now();
    if (event.t === 'hb') {
      // What the worker says of itself counts too (the host's /proc view may not reach it).
      if (event.rss > this.#rssLimit) this.#kill('memory', 'the sandbox process used too much memory');
      return;
    }
    if (event.t === 'crash') {
      this.#crash(event.reason, event.message);
      return;
    }
    this.#listener(event);
  }

  async #readStdout(stdout: AsyncIterable<Uint8Array>): Promise<void> {
    const lines = new LineSplitter(this.#options.runtime.maxMessageBytes * 6 + 4096);
    const onLine = (line: string) => {
      const event = validateEvent(line);
      if (event !== undefined) this.#onEvent(event);
    };
    for await (const chunk of stdout) {
      if (!lines.push(chunk, onLine)) {
        this.#kill('protocol', 'the sandbox process broke the protocol');
        return;
      }
    }
  }

  async #readStderr(stderr: AsyncIterable<Uint8Array>): Promise<void> {
    for await (const chunk of stderr) {
      const text = Buffer.from(chunk).toString('utf8');
      this.#stderrTail = (this.#stderrTail + text).slice(-4096);
      this.#options.logger.debug(`vm-sandbox child: ${text.trimEnd()}`);
    }
  }

  #watch(pid: number | undefined): void {
    let lastTick = performance.now();
    let measuring = false;
    this.#watchdog = setInterval(() => {
      if (this.#ended) return;
      const now = performance.now();
      const gap = now - lastTick;
      lastTick = now;
      // The host itself was stalled: the child's lines may wait unread. Judge it afresh.
      if (gap > 250) {
        this.#lastSeen = now;
        return;
      }
      // The vm timeout is advisory (one builtin call can run for long): the wall clock is not.
      if (performance.now() - this.#lastSeen > this.#timeoutMs + this.#graceMs) {
        this.#kill('timeout', `the sandbox process stopped responding for more than ${this.#timeoutMs} ms`);
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
            if (rss > this.#rssLimit) this.#kill('memory', 'the sandbox process used too much memory');
          },
          () => {
            measuring = false;
          },
        );
      }
    }, 50);
    this.#watchdog.unref();
  }
}

export function createProcessSession(options: SessionOptions, listener: SessionListener): Session {
  return new ProcessSession(options, listener);
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
