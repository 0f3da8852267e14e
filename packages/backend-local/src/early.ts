/**
 * A `local` sandbox started before the program has loaded (the binary's early start, for the
 * plainest `run` command lines): the sandbox's set-up and the server's start then overlap the
 * loading of the rest of the program (the MCP layer, the command line, the bridge).
 *
 * Nothing here builds a sandbox of its own: the early start calls the backend's own
 * `createLocalBackend(…).create(spec)` and `exec(command)`, the code every start runs. The program
 * later asks its backend to create a sandbox as always, and gets this one only when every input
 * that shaped it (the backend's options, the host environment, the working directory, the spec,
 * the command) is exactly what the program would have used. Otherwise, or when no backend takes
 * it, it is closed (killed and removed) unused.
 */

import type {
  ExecOptions,
  Logger,
  PrepareOptions,
  Sandbox,
  SandboxEvent,
  SandboxProcess,
  SandboxSpec,
} from '@mcpsandbox/core';
import { isUvxCommand, parseNpxCommand } from '@mcpsandbox/host-side';
import { holdOutput } from './child-process.js';
import { createLocalBackend, type LocalSandboxHandle } from './local.js';
import type { EarlyAdoption, LocalBackendOptions } from './options.js';
import { sameArray, sameRecord } from './session/same.js';

type Env = Readonly<Record<string, string | undefined>>;

/** What the early start is told: the server's command and environment, and the sandbox's TTL. */
export interface EarlyLocalRun {
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly ttlMs: number;
}

/**
 * How each field of a spec is checked when the program's sandbox is matched with the early one.
 * A record over every key, so that a field added to the contract must be placed here.
 */
const SPEC_FIELDS: { readonly [K in keyof Required<SandboxSpec>]: 'same' | 'not-used' } = {
  // The local backend reads no session id: it names its sandboxes itself.
  sessionId: 'not-used',
  env: 'same',
  ttlMs: 'same',
  mounts: 'same',
  network: 'same',
  limits: 'same',
  // Redirected to the program's own (see EarlyLocalStart.adopt).
  onEvent: 'not-used',
};

/** The backend options an early start is made with; any other option makes the program's differ. */
const FACTORY_OPTIONS = new Set(['hostEnv', 'logger', 'settings', 'takeEarlyStart']);

/** Holds what an early sandbox says until the program takes it, then passes it on, in order. */
class Relay<T> {
  readonly #held: { readonly value: T; readonly phase: 'create' | 'exec' }[] = [];
  #phase: 'create' | 'exec' = 'create';
  #to: ((value: T) => void) | undefined;
  #open: 'create' | 'all' | undefined;

  readonly push = (value: T): void => {
    if (this.#to && (this.#open === 'all' || this.#phase === 'create')) this.#to(value);
    else this.#held.push({ value, phase: this.#phase });
  };

  /** From here on, what is said belongs to the server's start. */
  execPhase(): void {
    this.#phase = 'exec';
  }

  /** Passes on what was said while the sandbox was made; the start's part waits for {@link all}. */
  connect(to: (value: T) => void): void {
    this.#to = to;
    this.#open = 'create';
    while (this.#held[0]?.phase === 'create') to((this.#held.shift() as { value: T }).value);
  }

  all(): void {
    this.#open = 'all';
    for (const { value } of this.#held.splice(0)) this.#to?.(value);
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** The early start's three steps, each begun as soon as the one before it ended. */
interface Steps {
  readonly sandbox: Promise<Sandbox & LocalSandboxHandle>;
  /** What `prepare` made of the command (an `npx -y` start: the installed server). */
  readonly prepared: Promise<readonly string[]>;
  readonly proc: Promise<SandboxProcess>;
}

/**
 * The early sandbox and its server, for the program's `local` backend ({@link adopt}), once.
 * The steps are those of the program's own start: create, prepare, exec.
 */
export class EarlyLocalStart implements EarlyAdoption {
  readonly #command: readonly string[];
  readonly #hostEnv: Env;
  readonly #cwd: string;
  readonly #spec: SandboxSpec;
  readonly #logs = new Relay<readonly [keyof Logger, string]>();
  readonly #events = new Relay<SandboxEvent>();
  readonly #stderr = new Relay<Uint8Array>();
  readonly #abort = new AbortController();
  #sandbox: (Sandbox & LocalSandboxHandle) | undefined;
  #steps: Steps | undefined;
  /** Lets the server's output go once its reader exists (holdOutput). */
  #release: () => void = () => {};

  constructor(run: EarlyLocalRun, hostEnv: Env) {
    this.#command = [...run.command];
    this.#hostEnv = { ...hostEnv };
    this.#cwd = process.cwd();
    this.#spec = {
      sessionId: 'early',
      env: { ...run.env },
      ttlMs: run.ttlMs,
      mounts: [],
      onEvent: this.#events.push,
    };
    const push = this.#logs.push;
    const logger: Logger = {
      debug: (message) => push(['debug', message]),
      info: (message) => push(['info', message]),
      warn: (message) => push(['warn', message]),
      error: (message) => push(['error', message]),
    };
    const backend = createLocalBackend({ hostEnv: this.#hostEnv, logger, settings: {} });
    const sandbox = backend.create(this.#spec).then((created) => {
      this.#sandbox = created as Sandbox & LocalSandboxHandle;
      for (const relay of [this.#logs, this.#events]) relay.execPhase();
      return this.#sandbox;
    });
    const prepared = sandbox.then(
      (created) =>
        created.prepare?.(this.#command, { stderr: this.#stderr.push, signal: this.#abort.signal }) ??
        this.#command,
    );
    const proc = Promise.all([sandbox, prepared]).then(async ([created, command]) => {
      const started = await created.exec(command);
      this.#release = holdOutput(started);
      return started;
    });
    this.#steps = { sandbox, prepared, proc };
    // A start that fails is the program's to report: it starts again, and says why.
    for (const step of [sandbox, prepared, proc]) step.catch(() => {});
  }

  /**
   * Settles once the sandbox exists and, for a command with no install step, the server has
   * been started (or either could not be): the program loads after it, so that its loading does
   * not hold back the start it is meant to overlap. An install step goes on meanwhile.
   */
  async started(): Promise<void> {
    const steps = this.#steps;
    if (!steps) return;
    await (parseNpxCommand(this.#command) || isUvxCommand(this.#command) ? steps.sandbox : steps.proc).catch(
      () => undefined,
    );
  }

  /**
   * The early sandbox, if the program's backend options and spec are exactly the ones it was
   * made with; otherwise it is closed, and the program makes its own. Once.
   */
  async adopt(options: LocalBackendOptions, spec: SandboxSpec): Promise<Sandbox | undefined> {
    const steps = this.#steps;
    this.#steps = undefined;
    if (!steps) return undefined;
    const sandbox = await steps.sandbox.catch(() => undefined);
    const logger = options.logger;
    if (!sandbox || !this.#matches(options, spec)) {
      await this.#end(steps);
      logger?.debug(
        sandbox
          ? 'the sandbox started early is not this start: closed it, starting again'
          : 'the sandbox started early could not be made: starting again',
      );
      return undefined;
    }
    logger?.debug('the sandbox was made early, while the program loaded');
    // Its lifetime counts from now, as a sandbox the program made now would: never before the
    // session's own TTL, which reports the expiry.
    sandbox.restartTtl(spec);
    this.#logs.connect(([level, message]) => logger?.[level](message));
    this.#events.connect((event) => spec.onEvent?.(event));
    return new AdoptedSandbox(sandbox, steps, this.#command, {
      start: () => {
        this.#logs.all();
        this.#events.all();
      },
      prepare: (prepareOptions) => {
        this.#stderr.connect(prepareOptions.stderr);
        this.#stderr.all();
        const signal = prepareOptions.signal;
        if (signal?.aborted) this.#abort.abort();
        signal?.addEventListener('abort', () => this.#abort.abort(), { once: true });
      },
      abort: () => this.#abort.abort(),
      release: () => this.#release(),
    });
  }

  #matches(options: LocalBackendOptions, spec: SandboxSpec): boolean {
    if (!Object.keys(options).every((key) => FACTORY_OPTIONS.has(key))) return false;
    if (!sameRecord(options.settings, {}) || !sameRecord(options.hostEnv ?? process.env, this.#hostEnv)) {
      return false;
    }
    if (process.cwd() !== this.#cwd) return false;
    return (Object.keys(SPEC_FIELDS) as (keyof SandboxSpec)[]).every(
      (key) => SPEC_FIELDS[key] === 'not-used' || sameJson(spec[key], this.#spec[key]),
    );
  }

  /** An install step stopped, the sandbox closed once whatever was under way has settled. */
  async #end(steps: Steps): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled([steps.sandbox, steps.prepared, steps.proc]);
    await this.#sandbox?.close();
  }

  /** At exit or on a signal, when nothing can be awaited: ends the sandbox unless it was adopted. */
  killNow(): void {
    if (this.#steps) this.#sandbox?.abandonNow();
  }

  /** Closes the sandbox unless it was adopted; resolves with whether one had been made. */
  async discard(): Promise<boolean> {
    const steps = this.#steps;
    this.#steps = undefined;
    if (!steps) return false;
    await this.#end(steps);
    return this.#sandbox !== undefined;
  }
}

interface AdoptHooks {
  /** The server's start has been asked for: what the early start said of it can be passed on. */
  readonly start: () => void;
  readonly prepare: (options: PrepareOptions) => void;
  /** Stops an install step still under way. */
  readonly abort: () => void;
  /** The early server's output is the session's to read from here on. */
  readonly release: () => void;
}

/**
 * The early sandbox as the program's: its first prepare and exec of the early command are the
 * early ones. Anything else ends the early server and runs as asked.
 */
class AdoptedSandbox implements Sandbox {
  readonly id: string;
  readonly #inner: Sandbox;
  readonly #command: readonly string[];
  readonly #hooks: AdoptHooks;
  #prepared: Promise<readonly string[]> | undefined;
  #proc: Promise<SandboxProcess> | undefined;
  #preparedCommand: readonly string[] | undefined;

  constructor(inner: Sandbox, steps: Steps, command: readonly string[], hooks: AdoptHooks) {
    this.id = inner.id;
    this.#inner = inner;
    this.#prepared = steps.prepared;
    this.#proc = steps.proc;
    this.#command = command;
    this.#hooks = hooks;
  }

  async prepare(command: readonly string[], options: PrepareOptions): Promise<readonly string[]> {
    this.#hooks.start();
    const early = this.#prepared;
    this.#prepared = undefined;
    if (early && sameArray(command, this.#command)) {
      this.#hooks.prepare(options);
      this.#preparedCommand = await early;
      return this.#preparedCommand;
    }
    await this.#dropEarly();
    return this.#inner.prepare?.(command, options) ?? command;
  }

  async exec(command: readonly string[], options?: ExecOptions): Promise<SandboxProcess> {
    this.#hooks.start();
    const early = this.#proc;
    this.#proc = undefined;
    this.#prepared = undefined;
    const expected = this.#preparedCommand ?? this.#command;
    const plain = options === undefined || Object.keys(options).length === 0;
    if (early && plain && sameArray(command, expected)) {
      const proc = await early;
      this.#hooks.release();
      return proc;
    }
    if (early) await this.#end(early);
    return this.#inner.exec(command, options);
  }

  /** Not the start it was made for: the early server goes, and this one starts as asked. */
  async #dropEarly(): Promise<void> {
    const early = this.#proc;
    this.#proc = undefined;
    if (!early) return;
    this.#hooks.abort();
    await this.#end(early);
  }

  async #end(early: Promise<SandboxProcess>): Promise<void> {
    const proc = await early.catch(() => undefined);
    await proc?.kill('SIGKILL');
    await proc?.exit;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}
