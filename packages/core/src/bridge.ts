import type { Readable, Writable } from 'node:stream';
import type { ExitStatus, Sandbox, SandboxBackend, SandboxProcess, SandboxSpec } from './contract.js';
import { type Deferred, deferred, within } from './deferred.js';
import { createRedactor, type Redactor } from './env.js';
import { WithheldEnvHints } from './env-hints.js';
import { isSandboxError, SandboxError, SetupFailedError } from './errors.js';
import { ExitCode, exitCodeOf, signalNumber } from './exit-codes.js';
import { DEFAULT_MAX_LINE_BYTES, type FrameHandler, LineFramer, lineContent } from './framing.js';
import {
  BridgeErrorCode,
  errorResponseLine,
  headHasMethod,
  idsLooselyEqual,
  idTextFromHead,
  inspectLargeLine,
  inspectMessage,
  type MessageInfo,
  readStrict,
  type StrictReading,
} from './jsonrpc.js';
import type { Logger } from './logger.js';
import type { ToolDescription, ToolPolicy } from './policy.js';
import { ControlEscaper, escapeControls } from './terminal.js';
import type { TraceSink } from './trace.js';
import { MAX_TIMER_MS } from './ttl.js';

export interface ShutdownTiming {
  /** After client EOF: how long to wait for replies still owed before asking the server to stop. */
  readonly drainMs: number;
  /** Then how long the server may take to exit on its own (many exit on stdin EOF). */
  readonly exitGraceMs: number;
  /** Between SIGTERM and SIGKILL. */
  readonly killGraceMs: number;
}

export const DEFAULT_SHUTDOWN_TIMING: ShutdownTiming = {
  drainMs: 10_000,
  exitGraceMs: 500,
  killGraceMs: 2_000,
};

export interface BridgeOptions {
  readonly backend: SandboxBackend;
  /** The server command, run in the sandbox. */
  readonly command: readonly string[];
  /** Shell commands run in the sandbox, in order, before the server. */
  readonly setup?: readonly string[];
  readonly spec: Omit<SandboxSpec, 'onEvent'>;
  /** Values redacted from the trace and from forwarded stderr. */
  readonly secrets?: readonly string[];
  /**
   * Host variables kept from the server, by name: when the server's stderr or an error it returns
   * names one, stderr says which `--env` flag passes it.
   */
  readonly withheldEnv?: readonly string[];
  /** The client's side: what it sends. */
  readonly input: Readable;
  /** The client's side: protocol only. */
  readonly output: Writable;
  /** The server's stderr, setup output and diverted stdout lines go here. */
  readonly errorOutput: Writable;
  readonly logger: Logger;
  readonly trace?: TraceSink;
  readonly maxLineBytes?: number;
  readonly timing?: Partial<ShutdownTiming>;
  /** Tool filtering and pinning: the only case where the bridge rewrites a message. */
  readonly policy?: ToolPolicy;
}

export type EndReason =
  | 'server-exit'
  | 'client-eof'
  | 'client-gone'
  | 'ttl'
  | 'signal'
  | 'sandbox-failure'
  | 'bridge-crash';

export interface BridgeResult {
  readonly exitCode: number;
  readonly reason: EndReason;
  /** How the server process ended, when it ran. */
  readonly serverStatus?: ExitStatus;
  readonly error?: SandboxError;
}

export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

export interface BridgeSession {
  readonly done: Promise<BridgeResult>;
  /**
   * Settles once the server's process has started (after the sandbox, setup steps and any
   * install), or the session ended first: true when the server started.
   */
  readonly started: Promise<boolean>;
  /** Ends the session as if the bridge received `signal`. Idempotent. */
  stop(signal: StopSignal): void;
  /**
   * Ends the session after a fault in the host process (an uncaught exception, an unhandled
   * rejection): records `bridge-crash`, stops the server, answers every request in flight with
   * -32000 and closes the sandbox; the result's exit code is 125. Idempotent.
   */
  crash(error: unknown): void;
}

/**
 * Runs one session: creates the sandbox, runs setup, starts the server and forwards
 * newline-delimited JSON-RPC both ways, verbatim, until one side ends. See DESIGN §4.
 */
export function startBridge(options: BridgeOptions): BridgeSession {
  const bridge = new Bridge(options);
  return {
    done: bridge.done,
    started: bridge.started,
    stop: (signal) => bridge.stop(signal),
    crash: (error) => bridge.crash(error),
  };
}

const NEWLINE = Buffer.from('\n');
/** Dropped server lines noted on stderr; the rest only in the trace (a flood must not flood stderr). */
const DROP_NOTES = 10;
/** Lines from this size on are classified from their ends (unless a trace needs their text). */
const LARGE_LINE_BYTES = 64 * 1024;

class Bridge {
  readonly done: Promise<BridgeResult>;
  get started(): Promise<boolean> {
    return this.#ready.promise.then((proc) => proc !== null);
  }
  readonly #o: BridgeOptions;
  readonly #timing: ShutdownTiming;
  readonly #redact: Redactor;
  readonly #trace: TraceSink | undefined;
  readonly #abort = new AbortController();
  readonly #ready: Deferred<SandboxProcess | null> = deferred();
  readonly #result: Deferred<BridgeResult> = deferred();
  /** Requests sent by the client and not yet answered: id key → id text. */
  readonly #inflight = new Map<string, string>();
  /** Ids of `tools/list` requests whose responses the policy filters. */
  readonly #toolLists = new Set<string>();
  /**
   * Ids of `server/discover` and `initialize` requests: their results describe the server, and a
   * `tools` array a hostile server adds to one is filtered like a list (2026-07-28 defines none).
   */
  readonly #descriptions = new Set<string>();
  readonly #policy: ToolPolicy | undefined;
  readonly #hints: WithheldEnvHints | undefined;
  #inflightDrained: Deferred<void> | undefined;
  #dropped = 0;
  #sandbox: Sandbox | undefined;
  #proc: SandboxProcess | undefined;
  #serverStatus: ExitStatus | undefined;
  #signalledByUs = false;
  #ending: { reason: EndReason; detail?: unknown } | undefined;
  /** Why the start failed after the client had already closed stdin: still the session's end. */
  #lateStartFailure: { readonly error: unknown } | undefined;
  #clientGone = false;
  #sandboxClosed: Promise<void> | undefined;
  #startup: Promise<void>;
  #serverOut: Promise<void> = Promise.resolve();
  #serverErr: Promise<void> = Promise.resolve();
  #ttl: NodeJS.Timeout;

  constructor(options: BridgeOptions) {
    this.#o = options;
    this.#timing = { ...DEFAULT_SHUTDOWN_TIMING, ...options.timing };
    this.#redact = createRedactor(options.secrets ?? []);
    this.#trace = options.trace;
    this.#policy = options.policy?.active ? options.policy : undefined;
    const hints = new WithheldEnvHints(options.withheldEnv ?? [], options.logger, options.trace);
    this.#hints = hints.active ? hints : undefined;
    this.done = this.#result.promise;

    const { backend, spec } = options;
    this.#trace?.event('session-start', {
      sessionId: spec.sessionId,
      backend: backend.id,
      isolation: backend.isolation,
      command: options.command,
      setup: options.setup ?? [],
      env: Object.keys(spec.env).sort(),
      ttlMs: spec.ttlMs,
      pid: process.pid,
    });
    options.output.on('error', () => this.#onClientGone());
    options.output.on('close', () => this.#onClientGone());
    this.#ttl = setTimeout(() => this.#end('ttl'), Math.min(spec.ttlMs, MAX_TIMER_MS));
    void this.#pumpClient();
    this.#startup = this.#start();
  }

  stop(signal: StopSignal): void {
    this.#end('signal', signal);
  }

  crash(error: unknown): void {
    this.#end('bridge-crash', error);
  }

  async #start(): Promise<void> {
    const { backend, spec, logger } = this.#o;
    const signal = this.#abort.signal;
    let proc: SandboxProcess;
    try {
      const sandbox = await backend.create(
        {
          ...spec,
          onEvent: (event) => this.#trace?.event(`sandbox.${event.type}`, { ...event, type: undefined }),
        },
        { signal },
      );
      this.#sandbox = sandbox;
      this.#trace?.event('sandbox-created', {
        backend: backend.id,
        isolation: backend.isolation,
        sandboxId: sandbox.id,
      });
      logger.debug(`sandbox ${sandbox.id} created`);
      if (this.#ending) return;
      for (const [index, step] of (this.#o.setup ?? []).entries()) {
        await this.#runSetup(sandbox, step, index);
        if (this.#ending) return;
      }
      let command = this.#o.command;
      if (sandbox.prepare) {
        // Install output comes from code the server chose: shown with its controls escaped.
        const escaper = new ControlEscaper();
        command = await sandbox.prepare(command, {
          stderr: (chunk) => this.#o.errorOutput.write(escaper.write(chunk)),
          signal,
        });
        this.#write(this.#o.errorOutput, escaper.end());
        if (command !== this.#o.command) this.#trace?.event('prepared', { command });
        if (this.#ending) return;
      }
      proc = await sandbox.exec(command);
    } catch (error) {
      // A client that closes stdin at once (`< /dev/null`) must still hear that the sandbox could not start.
      if (this.#ending?.reason === 'client-eof') this.#lateStartFailure = { error };
      this.#end('sandbox-failure', error);
      return;
    }
    this.#proc = proc;
    this.#trace?.event('process-start', { command: this.#o.command });
    if (this.#ending) {
      await proc.kill('SIGKILL');
      return;
    }
    this.#serverOut = this.#pumpServerStdout(proc);
    this.#serverErr = this.#pumpStderr(proc.stderr, this.#hints);
    this.#ready.resolve(proc);
    void proc.exit.then((status) => {
      this.#serverStatus = status;
      this.#trace?.event('process-exit', {
        code: status.code,
        signal: status.signal,
        ...(status.error ? { error: status.error.message, errorCode: status.error.code } : {}),
      });
      if (status.error) this.#o.logger.error(`the sandbox failed: ${status.error.message}`);
      this.#end('server-exit');
    });
  }

  async #runSetup(sandbox: Sandbox, step: string, index: number): Promise<void> {
    this.#o.logger.info(`setup ${index + 1}: ${this.#redact(step)}`);
    this.#trace?.event('setup-start', { index, command: step });
    const proc = await sandbox.exec(['sh', '-c', step], { purpose: 'setup' });
    const output = Promise.all([this.#pumpStderr(proc.stdout), this.#pumpStderr(proc.stderr)]);
    const aborted = new Promise<'aborted'>((resolve) => {
      if (this.#abort.signal.aborted) resolve('aborted');
      this.#abort.signal.addEventListener('abort', () => resolve('aborted'), { once: true });
    });
    const status = await Promise.race([proc.exit, aborted]);
    if (status === 'aborted') {
      await proc.kill('SIGKILL');
      return;
    }
    await within(output, 2_000);
    this.#trace?.event('setup-exit', { index, code: status.code, signal: status.signal });
    if (status.code !== 0) {
      const how = status.code === null ? `was killed by ${status.signal}` : `exited with code ${status.code}`;
      throw new SetupFailedError(`setup step ${index + 1} (${this.#redact(step)}) ${how}`, status.code);
    }
  }

  // ── client → server ──────────────────────────────────────────────────────────────────────

  async #pumpClient(): Promise<void> {
    try {
      await this.#pumpLines(
        this.#o.input,
        (line) => this.#toServer(line),
        (head, size) => this.#rejectOversizeRequest(head, size),
      );
    } catch (error) {
      this.#o.logger.debug(`client input failed: ${(error as Error).message}`);
    }
    this.#trace?.event('client-eof');
    this.#end('client-eof');
  }

  /**
   * Frames a byte stream into lines and hands them on one at a time, awaiting each: a slow
   * consumer stops the reading, which is the backpressure both directions rely on.
   */
  async #pumpLines(
    source: AsyncIterable<Uint8Array>,
    onLine: (line: Buffer) => Promise<void>,
    onOversize: (head: Buffer, size: number) => void,
  ): Promise<void> {
    const framer = new LineFramer({ maxLineBytes: this.#o.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES });
    const batch: Array<Buffer | { head: Buffer; size: number }> = [];
    const handler: FrameHandler = {
      line: (line) => batch.push(line),
      oversize: (head, size) => batch.push({ head, size }),
    };
    const drain = async () => {
      for (const item of batch) {
        if (Buffer.isBuffer(item)) await onLine(item);
        else onOversize(item.head, item.size);
      }
      batch.length = 0;
    };
    for await (const chunk of source) {
      framer.push(chunk, handler);
      if (batch.length > 0) await drain();
    }
    framer.end(handler);
    await drain();
  }

  async #toServer(line: Buffer): Promise<void> {
    const content = lineContent(line);
    if (content.length === 0) return;
    let text: string | undefined;
    // With a policy, every client line is read in full: its ids decide what the server may answer.
    let info = this.#policy ? undefined : this.#classify(content);
    if (info === undefined) {
      text = content.toString();
      info = inspectMessage(text);
    }
    if (info.kind === 'request') this.#inflight.set(info.idKey as string, info.idText as string);
    if (this.#policy) {
      // A refused call is recorded as a policy decision: it never crosses to the server.
      if (info.kind === 'request' && !this.#admit(info)) return;
      if (info.kind === 'batch' && !this.#admitBatch(info.value as unknown[])) return;
    }
    if (this.#trace)
      this.#trace.message('client->server', text as string, line.length, info.kind !== 'invalid');
    const proc = this.#proc ?? (await this.#ready.promise);
    if (proc && !this.#serverStatus) {
      try {
        await proc.write(line[line.length - 1] === 10 ? line : Buffer.concat([line, NEWLINE]));
        return;
      } catch (error) {
        this.#o.logger.debug(`write to server failed: ${(error as Error).message}`);
      }
    }
    if (info.kind === 'request') {
      this.#answer(
        info.idKey as string,
        info.idText as string,
        BridgeErrorCode.serverUnavailable,
        this.#unavailableMessage(),
      );
    }
  }

  #rejectOversizeRequest(head: Buffer, size: number): void {
    const max = this.#o.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    const text = head.toString();
    const idText = headHasMethod(text) ? idTextFromHead(text) : undefined;
    const message = `message of ${size} bytes exceeds the bridge's limit of ${max} bytes (--max-message-size); not sent to the server`;
    this.#o.logger.warn(`client ${message}`);
    this.#trace?.event('oversize', { dir: 'client->server', bytes: size, limit: max, id: idText ?? null });
    if (idText !== undefined)
      void this.#writeClient(errorResponseLine(idText, BridgeErrorCode.messageTooLarge, message));
  }

  // ── server → client ──────────────────────────────────────────────────────────────────────

  async #pumpServerStdout(proc: SandboxProcess): Promise<void> {
    try {
      await this.#pumpLines(
        proc.stdout,
        (line) => this.#toClient(line),
        (head, size) => this.#dropOversizeResponse(head, size),
      );
    } catch (error) {
      this.#o.logger.debug(`server stdout failed: ${(error as Error).message}`);
    }
  }

  async #toClient(line: Buffer): Promise<void> {
    const content = lineContent(line);
    if (content.length === 0) return;
    if (this.#policy) return this.#toClientChecked(line, content);
    let text: string | undefined;
    let info = this.#classify(content);
    if (info === undefined) {
      text = content.toString();
      info = inspectMessage(text);
    }
    if (this.#diverted(info, content, text)) return;
    if (info.kind === 'response') {
      this.#settle(info.idKey as string);
      this.#hints?.response(info.value);
    }
    const whole = line[line.length - 1] === 10 ? line : Buffer.concat([line, NEWLINE]);
    // Tracing always has the text (no fast path).
    if (this.#trace) this.#trace.message('server->client', text as string, whole.length, true);
    await this.#writeClient(whole);
  }

  /** stdout belongs to the protocol: anything else is the server's noise, shown on stderr. */
  #diverted(info: MessageInfo, content: Buffer, text: string | undefined): boolean {
    const notAnObject = info.value !== undefined && (typeof info.value !== 'object' || info.value === null);
    if (info.kind !== 'invalid' && !notAnObject) return false;
    const raw = text ?? content.toString();
    this.#trace?.event('stdout-diverted', { raw });
    this.#write(this.#o.errorOutput, `[server stdout, not JSON-RPC] ${escapeControls(this.#redact(raw))}\n`);
    return true;
  }

  /**
   * The policy's path: the line is read in full, and passes only if every client reads it the way
   * the bridge does. A response passes only for a request in flight with exactly its id; anything
   * else that may be a response is dropped, and the requests it might answer get an error instead.
   */
  async #toClientChecked(line: Buffer, content: Buffer): Promise<void> {
    const reading = readStrict(content);
    const { text, info } = reading;
    if (!info) return this.#drop(text, reading.ambiguity as string, reading);
    if (this.#diverted(info, content, text)) return;
    const whole = line[line.length - 1] === 10 ? line : Buffer.concat([line, NEWLINE]);
    let forward = whole;
    if (info.kind === 'response') {
      const idKey = info.idKey as string;
      // The same JSON value: `1.0` is request 1 to every client that parses numbers, and past 2^53
      // the key is the exact text, so a lossy match is not exact.
      if (!this.#inflight.has(idKey)) {
        const matched = this.#looseMatches(reading.idTexts);
        const reason =
          matched.length > 0
            ? `its id ${reading.idRaw} only matches request ${matched.map(([, t]) => t).join(', ')} under a lenient reading`
            : 'a response to a request never sent';
        return this.#drop(text, reason, reading);
      }
      if (this.#toolLists.has(idKey)) {
        const filtered = this.#filterTools(info, whole);
        if (!filtered) {
          const pending: [string, string] = [idKey, info.idText as string];
          return this.#drop(text, 'a tools/list result without a tools array', reading, [pending]);
        }
        this.#toolLists.delete(idKey);
        forward = filtered;
      } else if (this.#descriptions.delete(idKey)) {
        forward = this.#filterTools(info, whole, 'description') ?? whole;
      }
      this.#settle(idKey);
      this.#hints?.response(info.value);
    }
    if (this.#trace) {
      // A filtered list is traced as the client saw it.
      const traced = forward === whole ? text : lineContent(forward).toString();
      this.#trace.message('server->client', traced, forward.length, true);
    }
    await this.#writeClient(forward);
  }

  /** Requests in flight that a lenient reader could take any of `idTexts` for. */
  #looseMatches(idTexts: readonly string[]): Array<[string, string]> {
    return [...this.#inflight].filter(([, pending]) => idTexts.some((id) => idsLooselyEqual(id, pending)));
  }

  /**
   * Fails closed: the line does not reach the client. Requests it may have been meant to answer
   * get a policy error, so the client does not wait for an answer that will not come.
   */
  #drop(text: string, reason: string, reading: StrictReading, answered: Array<[string, string]> = []): void {
    this.#dropped++;
    if (this.#dropped <= DROP_NOTES) {
      const more = this.#dropped === DROP_NOTES ? ' (further drops are recorded only in the trace)' : '';
      this.#o.logger.warn(
        `dropped a server message (${reason}): with a tool policy active, only messages every client reads the same way pass${more}`,
      );
    }
    this.#trace?.event('policy', { action: 'dropped', reason, bytes: Buffer.byteLength(text), raw: text });
    const owed = new Map<string, string>(answered);
    if (reading.mayAnswer)
      for (const [idKey, idText] of this.#looseMatches(reading.idTexts)) owed.set(idKey, idText);
    for (const [idKey, idText] of owed) {
      this.#toolLists.delete(idKey);
      this.#descriptions.delete(idKey);
      this.#answer(
        idKey,
        idText,
        BridgeErrorCode.policyDenied,
        `mcp-sandbox: the server's answer was refused by this session's policy: ${reason}`,
      );
    }
  }

  /**
   * The fast path for large lines: classify from the first and last bytes instead of decoding and
   * parsing megabytes only to learn a method and an id. Undefined means "decode and parse it".
   */
  #classify(content: Buffer): MessageInfo | undefined {
    if (content.length < LARGE_LINE_BYTES || this.#trace) return undefined;
    return inspectLargeLine(content);
  }

  // ── tool policy ──────────────────────────────────────────────────────────────────────────

  /** Refuses a `tools/call` the policy forbids, without the server ever seeing it. */
  #admit(info: MessageInfo): boolean {
    const policy = this.#policy as ToolPolicy;
    if (info.method === 'tools/list') {
      this.#toolLists.add(info.idKey as string);
      return true;
    }
    if (info.method === 'server/discover' || info.method === 'initialize') {
      this.#descriptions.add(info.idKey as string);
      return true;
    }
    if (info.method !== 'tools/call') return true;
    const params = (info.value as { params?: { name?: unknown } }).params;
    const tool = typeof params?.name === 'string' ? params.name : '';
    const verdict = policy.verdict(tool);
    if (verdict.allowed) return true;
    this.#o.logger.warn(`refused a call to tool ${JSON.stringify(tool)} (${verdict.rule})`);
    this.#trace?.event('policy', { action: 'refused', tool, rule: verdict.rule, id: info.idText });
    this.#answer(
      info.idKey as string,
      info.idText as string,
      BridgeErrorCode.policyDenied,
      `mcp-sandbox: tool ${JSON.stringify(tool)} is not allowed by this session's policy (${verdict.rule})`,
    );
    return false;
  }

  /**
   * A client batch: its requests are in flight like any others, but one that lists or calls tools
   * is refused whole, since refusing part of it would mean rewriting it.
   */
  #admitBatch(batch: unknown[]): boolean {
    const requests = batch.map((m) => inspectMessage(JSON.stringify(m))).filter((m) => m.kind === 'request');
    for (const r of requests) this.#inflight.set(r.idKey as string, r.idText as string);
    if (!requests.some((r) => r.method === 'tools/list' || r.method === 'tools/call')) return true;
    this.#o.logger.warn('refused a batch that lists or calls tools: send such requests one by one');
    this.#trace?.event('policy', { action: 'refused', reason: 'a batch that lists or calls tools' });
    for (const r of requests) {
      this.#answer(
        r.idKey as string,
        r.idText as string,
        BridgeErrorCode.policyDenied,
        "mcp-sandbox: a batch that lists or calls tools is not allowed by this session's policy; send the requests one by one",
      );
    }
    return false;
  }

  /**
   * Filters a `tools/list` result: this one response is re-serialized, every other byte stays
   * verbatim. Undefined for a result a client could read tools from that this cannot check. A
   * `description` (a discover or initialize result) need not list tools, and what it lists is
   * hidden by the rules but never pinned: only `tools/list` says what the tools are.
   */
  #filterTools(info: MessageInfo, line: Buffer, kind: 'list' | 'description' = 'list'): Buffer | undefined {
    const policy = this.#policy as ToolPolicy;
    const message = info.value as { result?: unknown };
    if (!Object.hasOwn(message, 'result')) return line;
    const result = message.result as { tools?: unknown } | null;
    if (typeof result !== 'object' || result === null || !Array.isArray(result.tools))
      return kind === 'list' ? undefined : line;
    const tools = (result.tools as unknown[]).filter(
      (t): t is ToolDescription =>
        typeof t === 'object' && t !== null && typeof (t as ToolDescription).name === 'string',
    );
    for (const { tool, change } of kind === 'list' ? policy.review(tools) : []) {
      this.#o.logger.warn(`tool ${JSON.stringify(tool)} was ${change} since the tools were pinned`);
      this.#trace?.event('pin-drift', { tool, change });
    }
    const kept = tools.filter((tool) => {
      const verdict = policy.verdict(tool.name);
      if (!verdict.allowed)
        this.#trace?.event('policy', { action: 'hidden', tool: tool.name, rule: verdict.rule });
      return verdict.allowed;
    });
    if (kept.length === result.tools.length) return line;
    const body = JSON.stringify({ ...result, tools: kept });
    return Buffer.from(`{"jsonrpc":"2.0","id":${info.idText},"result":${body}}\n`);
  }

  #dropOversizeResponse(head: Buffer, size: number): void {
    const max = this.#o.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    const text = head.toString();
    const idText = headHasMethod(text) ? undefined : idTextFromHead(text);
    const message = `the server's message of ${size} bytes exceeds the bridge's limit of ${max} bytes (--max-message-size); dropped`;
    this.#o.logger.warn(message);
    this.#trace?.event('oversize', { dir: 'server->client', bytes: size, limit: max, id: idText ?? null });
    if (idText === undefined) return;
    const info = inspectMessage(`{"id":${idText},"result":null}`);
    if (info.idKey && this.#inflight.has(info.idKey)) {
      this.#answer(info.idKey, idText, BridgeErrorCode.messageTooLarge, message);
    }
  }

  /**
   * The server's stderr (and setup output) on the user's: control characters escaped, whether
   * stderr is a terminal or a log file a terminal shows later. The trace keeps the exact text.
   * `hints` (the server's own stderr only) is shown each chunk after it went out.
   */
  async #pumpStderr(stream: AsyncIterable<Uint8Array>, hints?: WithheldEnvHints): Promise<void> {
    const out = this.#o.errorOutput;
    const plain = !this.#trace && (this.#o.secrets ?? []).length === 0;
    try {
      if (plain) {
        const escaper = new ControlEscaper();
        for await (const chunk of stream) {
          await this.#writeStream(out, escaper.write(chunk));
          hints?.chunk(chunk);
        }
        const rest = escaper.end();
        if (rest) await this.#writeStream(out, rest);
        hints?.end();
        return;
      }
      const framer = new LineFramer({ maxLineBytes: 1024 * 1024 });
      const lines: string[] = [];
      const handler: FrameHandler = {
        line: (line) => lines.push(this.#redact(line.toString())),
        oversize: (head, size) => lines.push(`${this.#redact(head.toString())}… [${size} bytes]\n`),
      };
      const flush = async () => {
        for (const line of lines) {
          const text = line.endsWith('\n') ? line.slice(0, -1) : line;
          this.#trace?.event('stderr', { text });
          await this.#writeStream(out, `${escapeControls(text)}\n`);
          hints?.line(text);
        }
        lines.length = 0;
      };
      for await (const chunk of stream) {
        framer.push(chunk, handler);
        await flush();
      }
      framer.end(handler);
      await flush();
      hints?.end();
    } catch (error) {
      this.#o.logger.debug(`stderr relay failed: ${(error as Error).message}`);
    }
  }

  async #writeClient(buf: Buffer): Promise<void> {
    if (this.#clientGone) return;
    await this.#writeStream(this.#o.output, buf);
  }

  /** Writes with backpressure: waits for `drain` when the stream's buffer is full. */
  async #writeStream(stream: Writable, data: Uint8Array | string): Promise<void> {
    if (stream.destroyed || stream.writableEnded) return;
    if (stream.write(data)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        stream.off('drain', done);
        stream.off('close', done);
        stream.off('error', done);
        resolve();
      };
      stream.on('drain', done);
      stream.on('close', done);
      stream.on('error', done);
    });
  }

  #write(stream: Writable, text: string): void {
    if (!stream.destroyed && !stream.writableEnded) stream.write(text);
  }

  // ── in-flight requests ───────────────────────────────────────────────────────────────────

  #settle(idKey: string): void {
    this.#inflight.delete(idKey);
    if (this.#inflight.size === 0) this.#inflightDrained?.resolve();
  }

  #answer(idKey: string, idText: string, code: number, message: string): void {
    this.#settle(idKey);
    this.#trace?.event('synthesized-error', { id: idText, code, message });
    void this.#writeClient(errorResponseLine(idText, code, message));
  }

  #unavailableMessage(): string {
    const ending = this.#ending;
    if (ending?.reason === 'ttl') return `mcp-sandbox: the session's TTL expired before the server answered`;
    if (ending?.reason === 'signal') return `mcp-sandbox: the session was stopped (${String(ending.detail)})`;
    if (ending?.reason === 'sandbox-failure') {
      return `mcp-sandbox: the sandbox failed: ${errorMessage(ending.detail)}`;
    }
    if (ending?.reason === 'bridge-crash')
      return 'mcp-sandbox: internal error in the bridge; the session was closed';
    const status = this.#serverStatus;
    if (status?.error) return `mcp-sandbox: the sandbox failed: ${status.error.message}`;
    if (status) {
      const how = status.code !== null ? `with code ${status.code}` : `from ${status.signal}`;
      return `mcp-sandbox: the server exited ${how} before answering`;
    }
    return 'mcp-sandbox: the server ended before answering';
  }

  // ── the end ──────────────────────────────────────────────────────────────────────────────

  #onClientGone(): void {
    if (this.#clientGone) return;
    this.#clientGone = true;
    this.#end('client-gone');
  }

  #end(reason: EndReason, detail?: unknown): void {
    if (this.#ending) return;
    this.#ending = { reason, detail };
    clearTimeout(this.#ttl);
    void this.#shutdown(reason, detail).then(
      (result) => this.#result.resolve(result),
      (error) => {
        this.#o.logger.error(`shutdown failed: ${errorMessage(error)}`);
        this.#result.resolve({ exitCode: ExitCode.sandboxFailure, reason });
      },
    );
  }

  async #shutdown(endReason: EndReason, endDetail: unknown): Promise<BridgeResult> {
    let reason = endReason;
    let detail = endDetail;
    const { logger } = this.#o;
    const timing = this.#timing;
    if (reason === 'ttl') {
      logger.error(`TTL of ${this.#o.spec.ttlMs} ms expired: stopping the server`);
      this.#trace?.event('ttl-expired', { ttlMs: this.#o.spec.ttlMs });
    } else if (reason === 'signal') {
      logger.info(`received ${String(detail)}: stopping the server`);
      this.#trace?.event('signal', { signal: detail });
    } else if (reason === 'sandbox-failure') {
      logger.error(errorMessage(detail));
      this.#trace?.event('sandbox-failure', { message: errorMessage(detail), code: errorCode(detail) });
    } else if (reason === 'bridge-crash') {
      logger.error(`internal error: ${printable(errorMessage(detail))}; closing the sandbox`);
      this.#trace?.event('bridge-crash', {
        message: errorMessage(detail),
        ...(detail instanceof Error && detail.stack ? { stack: detail.stack } : {}),
      });
      this.#trace?.flush();
    }
    if (reason !== 'client-eof' && reason !== 'server-exit') this.#abort.abort();
    await within(this.#startup, 15_000);
    this.#ready.resolve(null);
    const late = this.#lateStartFailure;
    if (late) {
      reason = 'sandbox-failure';
      detail = late.error;
      logger.error(errorMessage(detail));
      this.#trace?.event('sandbox-failure', { message: errorMessage(detail), code: errorCode(detail) });
    }

    const proc = this.#proc;
    if (proc && !this.#serverStatus) {
      if (reason === 'client-eof') await this.#stopGracefully(proc, timing);
      else {
        await proc.closeStdin().catch(() => undefined);
        await this.#terminate(proc, reason === 'client-gone' ? timing.exitGraceMs : 0);
      }
    }
    // The server's last words reach the client before the bridge answers for it, and its last
    // stderr lines the user: a server that has already exited when the session takes it over (an
    // early start) may have written them before anything read its pipe.
    await within(Promise.all([this.#serverOut, this.#serverErr]), 2_000);
    for (const [idKey, idText] of [...this.#inflight]) {
      const code = reason === 'ttl' ? BridgeErrorCode.ttlExpired : BridgeErrorCode.serverUnavailable;
      this.#answer(idKey, idText, code, this.#unavailableMessage());
    }
    await this.#closeSandbox();
    const exitCode = this.#exitCode(reason, detail);
    const error = reason === 'sandbox-failure' && isSandboxError(detail) ? detail : undefined;
    this.#trace?.event('session-end', {
      reason,
      exitCode,
      serverCode: this.#serverStatus?.code ?? null,
      serverSignal: this.#serverStatus?.signal ?? null,
    });
    this.#trace?.flush();
    return {
      exitCode,
      reason,
      ...(this.#serverStatus ? { serverStatus: this.#serverStatus } : {}),
      ...(error ? { error } : {}),
    };
  }

  /** Client EOF: close the server's stdin, let it answer what it owes, then ask, then insist. */
  async #stopGracefully(proc: SandboxProcess, timing: ShutdownTiming): Promise<void> {
    await proc.closeStdin().catch(() => undefined);
    if (this.#inflight.size > 0) {
      this.#inflightDrained = deferred();
      await within(Promise.race([proc.exit, this.#inflightDrained.promise]), timing.drainMs);
    }
    if (this.#serverStatus) return;
    if ((await within(proc.exit, timing.exitGraceMs)) !== undefined) return;
    await this.#terminate(proc, 0);
  }

  /** SIGTERM, then SIGKILL after the grace period. */
  async #terminate(proc: SandboxProcess, waitFirstMs: number): Promise<void> {
    if (waitFirstMs > 0 && (await within(proc.exit, waitFirstMs)) !== undefined) return;
    if (this.#serverStatus) return;
    this.#signalledByUs = true;
    await proc.kill('SIGTERM').catch(() => undefined);
    if ((await within(proc.exit, this.#timing.killGraceMs)) !== undefined) return;
    this.#o.logger.warn(`the server ignored SIGTERM for ${this.#timing.killGraceMs} ms: sending SIGKILL`);
    this.#trace?.event('kill', { signal: 'SIGKILL' });
    await proc.kill('SIGKILL').catch(() => undefined);
    await within(proc.exit, 5_000);
  }

  #closeSandbox(): Promise<void> {
    this.#sandboxClosed ??= (async () => {
      const sandbox = this.#sandbox;
      if (!sandbox) return;
      try {
        await sandbox.close();
        this.#trace?.event('sandbox-closed', { sandboxId: sandbox.id });
      } catch (error) {
        this.#o.logger.error(`closing the sandbox failed: ${errorMessage(error)}`);
        this.#trace?.event('sandbox-close-failed', { message: errorMessage(error) });
      }
    })();
    return this.#sandboxClosed;
  }

  #exitCode(reason: EndReason, detail: unknown): number {
    switch (reason) {
      case 'ttl':
        return ExitCode.ttlExpired;
      case 'signal':
        return 128 + signalNumber(String(detail));
      case 'bridge-crash':
        return ExitCode.sandboxFailure;
      case 'sandbox-failure': {
        const code = errorCode(detail);
        // A backend that finds the user's input wanting only once it is asked (a missing key).
        if (code === 'E_USAGE') return ExitCode.usage;
        if (code === 'E_COMMAND_NOT_FOUND') return ExitCode.commandNotFound;
        if (code === 'E_CANNOT_EXECUTE') return ExitCode.cannotExecute;
        return ExitCode.sandboxFailure;
      }
      case 'server-exit':
        if (!this.#serverStatus || this.#serverStatus.error) return ExitCode.sandboxFailure;
        return exitCodeOf(this.#serverStatus);
      default:
        // The client ended the session, then the sandbox failed under the server: still a failure.
        if (this.#serverStatus?.error) return ExitCode.sandboxFailure;
        // The server's own exit counts unless we had to stop it.
        return this.#serverStatus && !this.#signalledByUs ? exitCodeOf(this.#serverStatus) : ExitCode.ok;
    }
  }
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return 'a value that cannot be printed';
  }
}

/** One line for a terminal: control characters (bar tab) shown as `?`. */
function printable(text: string): string {
  return text.replace(/[^\t\x20-\x7e\u00a0-\uffff]/g, '?');
}

function errorCode(error: unknown): string | undefined {
  return error instanceof SandboxError ? error.code : undefined;
}
