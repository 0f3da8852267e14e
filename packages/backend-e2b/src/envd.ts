import { PendingBytes, SandboxFailureError } from '@mcpsandbox/core';
import type { Sandbox as SdkSandbox } from 'e2b';
import { E2B_ERROR_CODES, type E2BErrorCode } from './errors.js';
import { FLAG_END_STREAM, readFrames } from './frames.js';
import { oneLine } from './text.js';

/**
 * A small client for envd, the agent in each VM, that reads everything it answers with a cap.
 *
 * envd runs inside the VM, so root there (or a template the attacker built) controls every byte
 * it sends. The SDK's Connect transport accepts stream frames up to 4 GiB and reads unary bodies
 * whole, and it cannot be given another fetch; so this backend speaks envd's Connect protocol
 * (JSON codec) itself, for the few calls it makes: the process stream is read frame by frame with
 * a cap per frame, checked before a byte of the frame is buffered, and unary answers are read up
 * to a small cap. Above a cap the call fails with `E_E2B_PROTOCOL` and the connection is dropped.
 * The SDK still does everything that talks to E2B's own API (create, kill, network, info).
 */

/** Default cap on one frame of a process stream (envd sends output in chunks of tens of KiB). */
export const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** Cap on a unary answer (an empty message, an error, or one written file's entry). */
export const MAX_UNARY_BYTES = 64 * 1024;
/** envd sends a keepalive on an idle stream this often, so proxies never reap a quiet server. */
const KEEPALIVE_SECONDS = '50';
/** The first envd that can close a process's stdin. */
const ENVD_CLOSE_STDIN = '0.5.2';
/** The first envd that takes a raw (octet-stream) file upload. */
const ENVD_OCTET_STREAM = '0.5.7';
/** Before this envd, a process start must name its user (the SDK names `user`). */
const ENVD_DEFAULT_USER = '0.4.0';
/** The SDK's default user, named to envd older than {@link ENVD_DEFAULT_USER}. */
const DEFAULT_USER = 'user';

/** Where envd is reached and the headers every call carries (routing, access token). */
export interface EnvdEndpoint {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly version: string;
}

export type ProcessEvent =
  | { readonly type: 'start'; readonly pid: number }
  | { readonly type: 'data'; readonly stream: 'stdout' | 'stderr'; readonly data: Uint8Array }
  | { readonly type: 'end'; readonly exitCode: number; readonly exited: boolean; readonly status: string }
  | { readonly type: 'keepalive' };

export interface ProcessConfig {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly envs: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

export interface StartOptions {
  readonly stdin: boolean;
  readonly signal: AbortSignal;
  /** envd kills the process after this long (helpers and installs; never the server). */
  readonly timeoutMs?: number;
}

/** A failed call to envd; `connectCode` is Connect's code when envd (or the edge) gave one. */
export class EnvdError extends SandboxFailureError {
  readonly connectCode: string | undefined;
  readonly status: number | undefined;

  constructor(
    message: string,
    options: { code: E2BErrorCode; cause?: unknown; connectCode?: string; status?: number },
  ) {
    super(message, { code: options.code, cause: options.cause });
    this.connectCode = options.connectCode;
    this.status = options.status;
  }
}

/** Reads what the SDK needs to reach envd, from the SDK sandbox it created. */
export function envdEndpoint(sdk: SdkSandbox): EnvdEndpoint {
  const fields = sdk as unknown as {
    envdApiUrl?: unknown;
    envdAccessToken?: unknown;
    envdPort?: unknown;
    envdApi?: { version?: unknown };
    connectionConfig?: { headers?: Record<string, unknown> };
  };
  const url = fields.envdApiUrl;
  const version = fields.envdApi?.version;
  if (typeof url !== 'string' || typeof version !== 'string' || typeof fields.envdPort !== 'number') {
    throw new SandboxFailureError(
      'this version of the e2b SDK does not say where envd is; install the version @mcpsandbox/backend-e2b pins',
      { code: E2B_ERROR_CODES.other },
    );
  }
  const headers: Record<string, string> = {
    'E2b-Sandbox-Id': sdk.sandboxId,
    'E2b-Sandbox-Port': String(fields.envdPort),
  };
  const agent = fields.connectionConfig?.headers?.['User-Agent'];
  if (typeof agent === 'string') headers['User-Agent'] = agent;
  if (typeof fields.envdAccessToken === 'string') headers['X-Access-Token'] = fields.envdAccessToken;
  return { url: url.replace(/\/+$/, ''), headers, version };
}

export class EnvdClient {
  readonly #endpoint: EnvdEndpoint;
  readonly #maxFrameBytes: number;
  readonly #requestTimeoutMs: number;
  readonly #redact: (text: string) => string;

  constructor(
    endpoint: EnvdEndpoint,
    options: { maxFrameBytes: number; requestTimeoutMs: number; redact?: (text: string) => string },
  ) {
    this.#endpoint = endpoint;
    this.#maxFrameBytes = options.maxFrameBytes;
    this.#requestTimeoutMs = options.requestTimeoutMs;
    this.#redact = options.redact ?? ((text) => text);
  }

  get supportsCloseStdin(): boolean {
    return compareVersions(this.#endpoint.version, ENVD_CLOSE_STDIN) >= 0;
  }

  /** Starts a process; the events come from envd's stream, each frame read with the cap. */
  async *start(config: ProcessConfig, options: StartOptions): AsyncGenerator<ProcessEvent> {
    const body = envelope(
      JSON.stringify({
        process: {
          cmd: config.cmd,
          args: config.args,
          envs: config.envs,
          ...(config.cwd ? { cwd: config.cwd } : {}),
        },
        // Always sent, as the SDK does: envd reads a start without it as "give it a stdin pipe".
        stdin: options.stdin,
      }),
    );
    const response = await this.#post(
      'process.Process/Start',
      {
        'Content-Type': 'application/connect+json',
        'Keepalive-Ping-Interval': KEEPALIVE_SECONDS,
        ...this.#userHeader(),
        ...(options.timeoutMs ? { 'Connect-Timeout-Ms': String(options.timeoutMs) } : {}),
      },
      body,
      options.signal,
      `start ${config.cmd}`,
    );
    if (!response.ok) throw await this.#httpError(response, `start ${config.cmd}`);
    if (!response.headers.get('content-type')?.startsWith('application/connect+json') || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      throw this.#protocol(`envd answered the start of ${config.cmd} with something other than a stream`);
    }
    const reader = response.body.getReader();
    let ended = false;
    try {
      for await (const frame of readFrames(reader, this.#maxFrameBytes, (why) => this.#protocol(why))) {
        const message = this.#parse(frame.payload);
        if (frame.flags & FLAG_END_STREAM) {
          ended = true;
          const error = (message as { error?: { code?: unknown; message?: unknown } }).error;
          if (error !== undefined && error !== null) {
            throw this.#connectError(error.code, error.message, undefined, `run ${config.cmd}`);
          }
          return;
        }
        yield this.#event(message);
      }
    } finally {
      if (!ended) await reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
  }

  /** Whether this envd needs the user named (it has no default user yet). */
  get #namesUser(): boolean {
    return compareVersions(this.#endpoint.version, ENVD_DEFAULT_USER) < 0;
  }

  /** The SDK's `Authorization: Basic` header naming the user, for envd that needs it. */
  #userHeader(): Record<string, string> {
    if (!this.#namesUser) return {};
    return { Authorization: `Basic ${Buffer.from(`${DEFAULT_USER}:`).toString('base64')}` };
  }

  async sendInput(pid: number, data: Uint8Array): Promise<void> {
    await this.#unary(
      'SendInput',
      { process: { pid }, input: { stdin: Buffer.from(data).toString('base64') } },
      'write to the server stdin',
    );
  }

  async closeStdin(pid: number): Promise<void> {
    await this.#unary('CloseStdin', { process: { pid } }, 'close the server stdin');
  }

  async kill(pid: number): Promise<void> {
    await this.#unary('SendSignal', { process: { pid }, signal: 'SIGNAL_SIGKILL' }, 'kill the process');
  }

  /**
   * Writes one file: an octet-stream upload (envd ≥ 0.5.7) or, on older templates, a one-file
   * multipart form, as the SDK does. The answer is read with the unary cap.
   */
  async writeFile(path: string, data: Uint8Array): Promise<void> {
    const doing = 'copy a mounted file into the sandbox';
    const query = new URLSearchParams({ path });
    // Before envd 0.4.0 the user had to be named; the SDK's default is `user`.
    if (this.#namesUser) query.set('username', DEFAULT_USER);
    const octet = compareVersions(this.#endpoint.version, ENVD_OCTET_STREAM) >= 0;
    let body: Uint8Array | FormData = data;
    if (!octet) {
      body = new FormData();
      body.append('file', new Blob([data]), path);
    }
    const response = await this.#post(
      `files?${query}`,
      octet ? { 'Content-Type': 'application/octet-stream' } : {},
      body,
      AbortSignal.timeout(this.#requestTimeoutMs),
      doing,
    );
    if (!response.ok) throw await this.#httpError(response, doing);
    await readCapped(response, MAX_UNARY_BYTES, (why) => this.#protocol(why));
  }

  async #unary(method: string, message: unknown, doing: string): Promise<void> {
    const response = await this.#post(
      `process.Process/${method}`,
      { 'Content-Type': 'application/json', 'Connect-Timeout-Ms': String(this.#requestTimeoutMs) },
      JSON.stringify(message),
      AbortSignal.timeout(this.#requestTimeoutMs),
      doing,
    );
    if (!response.ok) throw await this.#httpError(response, doing);
    await readCapped(response, MAX_UNARY_BYTES, (why) => this.#protocol(why));
  }

  async #post(
    path: string,
    headers: Record<string, string>,
    body: Uint8Array | string | FormData,
    signal: AbortSignal,
    doing: string,
  ): Promise<Response> {
    try {
      return await fetch(`${this.#endpoint.url}/${path}`, {
        method: 'POST',
        headers: { ...this.#endpoint.headers, 'Connect-Protocol-Version': '1', ...headers },
        body,
        signal,
        // A redirect would carry the access token to a host nobody chose.
        redirect: 'error',
      });
    } catch (error) {
      throw this.#transportError(error, doing);
    }
  }

  #transportError(error: unknown, doing: string): EnvdError {
    if (error instanceof EnvdError) return error;
    const name = (error as { name?: unknown } | undefined)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') {
      return new EnvdError(`envd did not answer in time while trying to ${doing}`, {
        code: E2B_ERROR_CODES.timeout,
        cause: error,
      });
    }
    return new EnvdError(`cannot reach envd in the E2B sandbox to ${doing} (${this.#text(error)})`, {
      code: E2B_ERROR_CODES.unreachable,
      cause: error,
    });
  }

  async #httpError(response: Response, doing: string): Promise<EnvdError> {
    let detail: unknown;
    try {
      const text = await readCapped(response, MAX_UNARY_BYTES, (why) => this.#protocol(why));
      detail = JSON.parse(text);
    } catch {
      detail = undefined;
    }
    const error = detail as { code?: unknown; message?: unknown } | undefined;
    return this.#connectError(error?.code, error?.message ?? response.statusText, response.status, doing);
  }

  #connectError(code: unknown, message: unknown, status: number | undefined, doing: string): EnvdError {
    const connectCode = typeof code === 'string' ? code : undefined;
    const detail = this.#text(message);
    const options = {
      ...(connectCode ? { connectCode } : {}),
      ...(status !== undefined ? { status } : {}),
    };
    // The edge answers 502 for a sandbox that no longer runs.
    if (status === 502 || connectCode === 'unavailable') {
      return new EnvdError(
        `the E2B sandbox is no longer running (TTL reached or killed) while trying to ${doing}`,
        { code: E2B_ERROR_CODES.timeout, ...options },
      );
    }
    const table: Record<string, [E2BErrorCode, string]> = {
      deadline_exceeded: [E2B_ERROR_CODES.timeout, 'E2B timed out'],
      canceled: [E2B_ERROR_CODES.timeout, 'E2B timed out'],
      unauthenticated: [E2B_ERROR_CODES.auth, 'the E2B sandbox refused the access token'],
      resource_exhausted: [E2B_ERROR_CODES.quota, 'E2B rate limit reached'],
      not_found: [E2B_ERROR_CODES.notFound, 'envd could not find it'],
    };
    const byStatus: Record<number, string> = {
      401: 'unauthenticated',
      404: 'not_found',
      429: 'resource_exhausted',
    };
    const [errorCode, what] = table[connectCode ?? byStatus[status ?? 0] ?? ''] ?? [
      E2B_ERROR_CODES.other,
      'envd failed',
    ];
    return new EnvdError(`${what} while trying to ${doing} (${detail})`, { code: errorCode, ...options });
  }

  #protocol(why: string): EnvdError {
    return new EnvdError(`${why}; the stream from envd was dropped`, { code: E2B_ERROR_CODES.protocol });
  }

  #text(value: unknown): string {
    return this.#redact(oneLine(value instanceof Error ? value.message : String(value ?? ''), 200));
  }

  #parse(payload: Uint8Array): Record<string, unknown> {
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString());
    } catch (error) {
      throw new EnvdError('envd sent a frame that is not JSON; the stream from envd was dropped', {
        code: E2B_ERROR_CODES.protocol,
        cause: error,
      });
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw this.#protocol('envd sent a frame that is not a message');
    }
    return value as Record<string, unknown>;
  }

  /** One process event, checked field by field (proto3 JSON: defaults may be left out). */
  #event(message: Record<string, unknown>): ProcessEvent {
    const event = message.event as Record<string, unknown> | undefined;
    if (typeof event !== 'object' || event === null)
      throw this.#protocol('envd sent a message without an event');
    const keys = Object.keys(event);
    if (keys.length !== 1) throw this.#protocol('envd sent an event that is not exactly one kind');
    const start = event.start as { pid?: unknown } | undefined;
    if (start !== undefined) {
      const pid = integer(start?.pid);
      if (pid === undefined || pid <= 0) throw this.#protocol('envd sent a start event without a valid pid');
      return { type: 'start', pid };
    }
    const data = event.data as Record<string, unknown> | undefined;
    if (data !== undefined) {
      const stream =
        data?.stdout !== undefined ? 'stdout' : data?.stderr !== undefined ? 'stderr' : undefined;
      if (stream === undefined) {
        if (data?.pty !== undefined) return { type: 'keepalive' }; // never asked for; dropped
        throw this.#protocol('envd sent a data event without output');
      }
      const encoded = data[stream];
      if (typeof encoded !== 'string') throw this.#protocol('envd sent output that is not base64 text');
      return { type: 'data', stream, data: Buffer.from(encoded, 'base64') };
    }
    const end = event.end as { exitCode?: unknown; exited?: unknown; status?: unknown } | undefined;
    if (end !== undefined) {
      const exitCode = end?.exitCode === undefined ? 0 : integer(end.exitCode);
      if (exitCode === undefined) throw this.#protocol('envd sent an end event with an invalid exit code');
      return {
        type: 'end',
        exitCode,
        exited: end?.exited === true,
        status: typeof end?.status === 'string' ? end.status.slice(0, 200) : '',
      };
    }
    if (event.keepalive !== undefined) return { type: 'keepalive' };
    throw this.#protocol('envd sent an event of an unknown kind');
  }
}

/** proto3 JSON writes 32-bit integers as numbers (or, by the spec, as decimal strings). */
function integer(value: unknown): number | undefined {
  const number = typeof value === 'string' && /^-?\d{1,10}$/.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isSafeInteger(number) ? number : undefined;
}

/** Connect's streaming framing: one flag byte, a 4-byte big-endian length, the payload. */
function envelope(json: string): Uint8Array {
  const payload = Buffer.from(json);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** Reads a body up to `max` bytes; a longer one (declared or actual) is refused and dropped. */
async function readCapped(
  response: Response,
  max: number,
  protocol: (why: string) => Error,
): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (!response.body) return '';
  const reader = response.body.getReader();
  try {
    if (declared > max) throw protocol(`envd sent an answer of ${declared} bytes, over the cap of ${max}`);
    const body = new PendingBytes();
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      if (body.length + next.value.byteLength > max) {
        throw protocol(`envd sent an answer of more than ${max} bytes`);
      }
      body.append(next.value);
    }
    return body.takeAll().toString();
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    throw error;
  } finally {
    reader.releaseLock();
  }
}

function compareVersions(a: string, b: string): number {
  const parse = (v: string) => v.split(/[.-]/).map((part) => Number.parseInt(part, 10) || 0);
  const [x, y] = [parse(a), parse(b)];
  for (let i = 0; i < 3; i++) {
    const diff = (x[i] ?? 0) - (y[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}
