import type { Writable } from 'node:stream';
import {
  type BridgeOptions,
  type BridgeResult,
  type BridgeSession,
  DEFAULT_SHUTDOWN_TIMING,
  type EndReason,
  type ShutdownTiming,
  type StopSignal,
} from './bridge-types.js';
import type { ExitStatus, Sandbox, SandboxProcess } from './contract.js';
import { type Deferred, deferred, within } from './deferred.js';
import { WithheldEnvHints } from './env-hints.js';
import { isSandboxError, SetupFailedError } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { DEFAULT_MAX_LINE_BYTES, lineContent, pumpLines } from './framing.js';
import { InFlightRequests } from './inflight.js';
import {
  BridgeErrorCode,
  errorResponseLine,
  headHasMethod,
  idTextFromHead,
  inspectLargeLine,
  inspectMessage,
  type MessageInfo,
} from './jsonrpc.js';
import { redactLogger } from './logger.js';
import { combineHints, HostPathHints, type ServerOutputHints } from './path-hints.js';
import { asSecretSet, type Redactor, type SecretSet } from './secrets.js';
import { errorCode, errorMessage, printable, sessionExitCode, unavailableMessage } from './session-end.js';
import { relayStderr, writeStream } from './stderr-relay.js';
import { ControlEscaper, escapeControls } from './terminal.js';
import { ToolGate } from './tool-gate.js';
import type { TraceSink } from './trace.js';
import { MAX_TIMER_MS } from './ttl.js';

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
/** Lines from this size on are classified from their ends (unless a trace needs their text). */
const LARGE_LINE_BYTES = 64 * 1024;

class Bridge {
  readonly done: Promise<BridgeResult>;
  get started(): Promise<boolean> {
    return this.#ready.promise.then((proc) => proc !== null);
  }
  readonly #o: BridgeOptions;
  readonly #timing: ShutdownTiming;
  readonly #maxLineBytes: number;
  readonly #secrets: SecretSet;
  readonly #redact: Redactor;
  readonly #trace: TraceSink | undefined;
  readonly #abort = new AbortController();
  readonly #ready: Deferred<SandboxProcess | null> = deferred();
  readonly #result: Deferred<BridgeResult> = deferred();
  readonly #inflight: InFlightRequests;
  /** With a tool policy: what it lets through, both ways. */
  readonly #gate: ToolGate | undefined;
  readonly #hints: ServerOutputHints | undefined;
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
    this.#secrets = asSecretSet(options.secrets ?? []);
    this.#redact = this.#secrets.redact;
    // What the bridge logs quotes the server (tool names, errors): redacted like its stderr.
    this.#o = { ...options, logger: redactLogger(options.logger, this.#redact) };
    this.#timing = { ...DEFAULT_SHUTDOWN_TIMING, ...options.timing };
    this.#maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    this.#trace = options.trace;
    this.#inflight = new InFlightRequests((line) => void this.#writeClient(line), options.trace);
    const policy = options.policy?.active ? options.policy : undefined;
    this.#gate = policy
      ? new ToolGate({
          // A review of this session's own: what one session learns never changes what another trusts.
          review: policy.session(),
          inflight: this.#inflight,
          logger: this.#o.logger,
          trace: options.trace,
        })
      : undefined;
    this.#hints = combineHints([
      new WithheldEnvHints(options.withheldEnv ?? [], this.#o.logger, options.trace, {
        suggestSecrets: options.secretHints ?? false,
      }),
      new HostPathHints(options.mountHints ?? [], this.#o.logger, options.trace),
    ]);
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
      if (this.#startCancelled()) return;
      for (const [index, step] of (this.#o.setup ?? []).entries()) {
        await this.#runSetup(sandbox, step, index);
        if (this.#startCancelled()) return;
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
        if (this.#startCancelled()) return;
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
    if (this.#startCancelled()) {
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

  /**
   * Whether a start under way must stop. A client that closed stdin before the server was up (`<
   * /dev/null`, a script that sent nothing) meets the server as a direct start would: it starts,
   * reads EOF, and its last stderr lines and exit code reach the user. Any other end, or a start
   * the shutdown gave up waiting for, stops it.
   */
  #startCancelled(): boolean {
    if (!this.#ending) return false;
    return this.#ending.reason !== 'client-eof' || this.#abort.signal.aborted;
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
      await pumpLines(
        this.#o.input,
        this.#maxLineBytes,
        (line) => this.#toServer(line),
        (head, size) => this.#rejectOversizeRequest(head, size),
      );
    } catch (error) {
      this.#o.logger.debug(`client input failed: ${(error as Error).message}`);
    }
    this.#trace?.event('client-eof');
    this.#end('client-eof');
  }

  async #toServer(line: Buffer): Promise<void> {
    const content = lineContent(line);
    if (content.length === 0) return;
    let text: string | undefined;
    // With a policy, every client line is read in full: its ids decide what the server may answer.
    let info = this.#gate ? undefined : this.#classify(content);
    if (info === undefined) {
      text = content.toString();
      info = inspectMessage(text);
    }
    if (info.kind === 'request') this.#inflight.add(info.idKey as string, info.idText as string);
    else if (info.kind === 'notification') this.#inflight.cancel(info.value);
    if (this.#gate) {
      // A refused call is recorded as a policy decision: it never crosses to the server.
      if (info.kind === 'request' && !this.#gate.admit(info)) return;
      if (info.kind === 'batch' && !this.#gate.admitBatch(info.value as unknown[])) return;
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
      this.#inflight.answer(
        info.idKey as string,
        info.idText as string,
        BridgeErrorCode.serverUnavailable,
        unavailableMessage(this.#ending, this.#serverStatus),
      );
    }
  }

  #rejectOversizeRequest(head: Buffer, size: number): void {
    const max = this.#maxLineBytes;
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
      await pumpLines(
        proc.stdout,
        this.#maxLineBytes,
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
    const whole = line[line.length - 1] === 10 ? line : Buffer.concat([line, NEWLINE]);
    if (this.#gate) return this.#toClientChecked(this.#gate, whole, content);
    let text: string | undefined;
    let info = this.#classify(content);
    if (info === undefined) {
      text = content.toString();
      info = inspectMessage(text);
    }
    if (this.#diverted(info, content, text)) return;
    if (info.kind === 'response') {
      this.#inflight.settle(info.idKey as string);
      this.#hints?.response(info.value);
    }
    // Tracing always has the text (no fast path).
    if (this.#trace) this.#trace.message('server->client', text as string, whole.length, true);
    await this.#writeClient(whole);
  }

  /** The policy's path: the gate reads the line in full and decides what the client gets. */
  async #toClientChecked(gate: ToolGate, whole: Buffer, content: Buffer): Promise<void> {
    const passed = gate.check(whole, content, (info, raw, text) => this.#diverted(info, raw, text));
    if (!passed) return;
    if (passed.response !== undefined) this.#hints?.response(passed.response);
    if (this.#trace) {
      // A filtered list is traced as the client saw it.
      const traced = passed.filtered ? lineContent(passed.line).toString() : passed.text;
      this.#trace.message('server->client', traced, passed.line.length, true);
    }
    await this.#writeClient(passed.line);
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
   * The fast path for large lines: classify from the first and last bytes instead of decoding and
   * parsing megabytes only to learn a method and an id. Undefined means "decode and parse it".
   */
  #classify(content: Buffer): MessageInfo | undefined {
    if (content.length < LARGE_LINE_BYTES || this.#trace) return undefined;
    return inspectLargeLine(content);
  }

  #dropOversizeResponse(head: Buffer, size: number): void {
    const max = this.#maxLineBytes;
    const text = head.toString();
    const idText = headHasMethod(text) ? undefined : idTextFromHead(text);
    const message = `the server's message of ${size} bytes exceeds the bridge's limit of ${max} bytes (--max-message-size); dropped`;
    this.#o.logger.warn(message);
    this.#trace?.event('oversize', { dir: 'server->client', bytes: size, limit: max, id: idText ?? null });
    if (idText === undefined) return;
    const info = inspectMessage(`{"id":${idText},"result":null}`);
    if (info.idKey && this.#inflight.has(info.idKey)) {
      this.#inflight.answer(info.idKey, idText, BridgeErrorCode.messageTooLarge, message);
    }
  }

  /** The server's stderr (and setup output) on the user's; `hints` for the server's own only. */
  #pumpStderr(stream: AsyncIterable<Uint8Array>, hints?: ServerOutputHints): Promise<void> {
    return relayStderr(stream, {
      out: this.#o.errorOutput,
      logger: this.#o.logger,
      trace: this.#trace,
      redact: this.#redact,
      redactHead: this.#secrets.redactCut,
      plain: !this.#trace && this.#secrets.size === 0,
      hints,
    });
  }

  async #writeClient(buf: Buffer): Promise<void> {
    if (this.#clientGone) return;
    await writeStream(this.#o.output, buf);
  }

  #write(stream: Writable, text: string): void {
    if (!stream.destroyed && !stream.writableEnded) stream.write(text);
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

  /** Says why the session ends, on stderr and in the trace. */
  #announceEnd(reason: EndReason, detail: unknown): void {
    const { logger } = this.#o;
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
  }

  async #shutdown(endReason: EndReason, endDetail: unknown): Promise<BridgeResult> {
    let reason = endReason;
    let detail = endDetail;
    const timing = this.#timing;
    this.#announceEnd(reason, detail);
    if (reason !== 'client-eof' && reason !== 'server-exit') this.#abort.abort();
    const started = await within(
      this.#startup.then(() => true),
      15_000,
    );
    // A start still running 15 s after the client left is given up: its next step sees the abort.
    if (!started) this.#abort.abort();
    this.#ready.resolve(null);
    const late = this.#lateStartFailure;
    if (late) {
      reason = 'sandbox-failure';
      detail = late.error;
      this.#announceEnd(reason, detail);
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
    const code = reason === 'ttl' ? BridgeErrorCode.ttlExpired : BridgeErrorCode.serverUnavailable;
    for (const [idKey, idText] of this.#inflight.entries()) {
      this.#inflight.answer(idKey, idText, code, unavailableMessage(this.#ending, this.#serverStatus));
    }
    await this.#closeSandbox();
    const exitCode = sessionExitCode({ reason, detail }, this.#serverStatus, this.#signalledByUs);
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
    if (this.#inflight.size > 0)
      await within(Promise.race([proc.exit, this.#inflight.drained()]), timing.drainMs);
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
}
