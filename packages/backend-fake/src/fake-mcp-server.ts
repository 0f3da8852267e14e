import { PendingBytes } from '@mcpsandbox/core';
import { rawJsonMember } from './json-id.js';
import type { FakeProgram, FakeProgramContext } from './program.js';

/**
 * A scriptable fake MCP server: JSON-RPC 2.0, one message a line, over the program's stdio. It is
 * an ordinary {@link FakeProgram}, so it runs in the fake backend and, through
 * `runFakeMcpServer`, as a real process. Flags switch on the misbehaviours a bridge must survive.
 */

export const FAKE_MCP_SERVER_NAME = 'fake-mcp-server';
export const FAKE_MCP_SERVER_VERSION = '1.0.0';
/** Answered to an `initialize` that names no protocol version. */
export const FAKE_MCP_DEFAULT_PROTOCOL_VERSION = '2025-11-25';
/** The protocol revision without `initialize`: `server/discover`, `_meta` on each request. */
export const FAKE_MCP_MODERN_PROTOCOL_VERSION = '2026-07-28';
/** The largest reply the `big` tool builds (a JS string cannot hold much more). */
export const FAKE_MCP_MAX_BIG_BYTES = 256 * 1024 * 1024;

export interface FakeMcpServerFlags {
  /** `--dribble`: every output byte is written on its own. */
  readonly dribble: boolean;
  /** `--noise`: lines that are not JSON on stdout, at start and before every response. */
  readonly noise: boolean;
  /** `--start-delay <ms>`: reads nothing (and writes nothing) until then. */
  readonly startDelayMs: number;
  /** `--exit-after <n>`: exits after answering n requests. */
  readonly exitAfter: number | undefined;
  /** `--exit-code <c>`: the code for `--exit-after` (default 1). */
  readonly exitCode: number;
  /** `--ignore-eof`: keeps running after stdin ends, until killed. */
  readonly ignoreEof: boolean;
  /** `--ignore-sigterm`: SIGTERM only logs to stderr; SIGKILL is needed. */
  readonly ignoreSigterm: boolean;
  /** `--stderr-flood <bytes>`: writes that many bytes to stderr before reading stdin. */
  readonly stderrFloodBytes: number;
  /** `--crlf`: output lines end with `\r\n` instead of `\n`. */
  readonly crlf: boolean;
}

export const FAKE_MCP_SERVER_USAGE = `usage: fake-mcp-server [flags]
  --dribble               write every output byte on its own
  --noise                 write lines that are not JSON on stdout (at start, before every response)
  --start-delay <ms>      read nothing until <ms> milliseconds have passed
  --exit-after <n>        exit after answering <n> requests
  --exit-code <c>         exit code for --exit-after (default 1)
  --ignore-eof            keep running after stdin ends, until killed
  --ignore-sigterm        ignore SIGTERM (only SIGKILL ends it)
  --stderr-flood <bytes>  write <bytes> bytes to stderr before reading stdin
  --crlf                  end output lines with \\r\\n
`;

/** Parses the fake server's flags; throws an Error whose message says what is wrong. */
export function parseFakeMcpServerArgs(args: readonly string[]): FakeMcpServerFlags {
  const flags = {
    dribble: false,
    noise: false,
    startDelayMs: 0,
    exitAfter: undefined as number | undefined,
    exitCode: 1,
    ignoreEof: false,
    ignoreSigterm: false,
    stderrFloodBytes: 0,
    crlf: false,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const count = (): number => {
      const value = args[++i];
      const parsed = Number(value);
      if (value === undefined || value.trim() === '' || !Number.isSafeInteger(parsed) || parsed < 0) {
        throw new Error(`${arg} needs a non-negative integer, got ${JSON.stringify(value)}`);
      }
      return parsed;
    };
    switch (arg) {
      case '--dribble':
        flags.dribble = true;
        break;
      case '--noise':
        flags.noise = true;
        break;
      case '--start-delay':
        flags.startDelayMs = count();
        break;
      case '--exit-after':
        flags.exitAfter = count();
        break;
      case '--exit-code':
        flags.exitCode = count();
        if (flags.exitCode > 255) throw new Error(`--exit-code must be 0-255, got ${flags.exitCode}`);
        break;
      case '--ignore-eof':
        flags.ignoreEof = true;
        break;
      case '--ignore-sigterm':
        flags.ignoreSigterm = true;
        break;
      case '--stderr-flood':
        flags.stderrFloodBytes = count();
        break;
      case '--crlf':
        flags.crlf = true;
        break;
      default:
        throw new Error(`unknown flag ${JSON.stringify(arg)}`);
    }
  }
  return flags;
}

interface Tool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
}

/** The tools `tools/list` returns, in order. */
export const FAKE_MCP_TOOLS: readonly Tool[] = [
  {
    name: 'echo',
    description: 'Returns its text argument.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'add',
    description: 'Adds two numbers.',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
  {
    name: 'get-env',
    description: "Returns the server's environment as JSON text.",
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'slow',
    description: 'Answers after ms milliseconds (cancellable with notifications/cancelled).',
    inputSchema: {
      type: 'object',
      properties: { ms: { type: 'integer', minimum: 0 } },
      required: ['ms'],
    },
  },
  {
    name: 'big',
    description: `Returns a text of the given number of bytes ("x" repeated, at most ${FAKE_MCP_MAX_BIG_BYTES}).`,
    inputSchema: {
      type: 'object',
      properties: { bytes: { type: 'integer', minimum: 0, maximum: FAKE_MCP_MAX_BIG_BYTES } },
      required: ['bytes'],
    },
  },
];

class RpcError extends Error {
  constructor(
    readonly rpcCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** A request whose reply must not be sent (cancelled by the client). */
const CANCELLED = Symbol('cancelled');

type ToolResult = { content: { type: 'text'; text: string }[]; isError?: true };

/** Output lines queued before the server stops reading stdin. */
const MAX_QUEUED_LINES = 64;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The fake MCP server as an in-memory program: `exec(['fake-mcp-server', ...flags])`. */
export const fakeMcpServer: FakeProgram = async (ctx) => {
  let flags: FakeMcpServerFlags;
  try {
    flags = parseFakeMcpServerArgs(ctx.args);
  } catch (error) {
    await ctx.stderr.write(`${FAKE_MCP_SERVER_NAME}: ${(error as Error).message}\n${FAKE_MCP_SERVER_USAGE}`);
    return 64;
  }
  return new FakeMcpSession(ctx, flags).run();
};

class FakeMcpSession {
  readonly #ctx: FakeProgramContext;
  readonly #flags: FakeMcpServerFlags;
  readonly #eol: string;
  #out: Promise<void> = Promise.resolve();
  #answered = 0;
  #noiseCount = 0;
  /** Output lines queued and not yet accepted by stdout. */
  #queued = 0;
  readonly #inflight = new Set<Promise<void>>();
  /** In-flight cancellable requests by normalized id. */
  readonly #cancellable = new Map<string, AbortController>();
  #stop!: (code: number) => void;
  readonly #stopped: Promise<number>;

  constructor(ctx: FakeProgramContext, flags: FakeMcpServerFlags) {
    this.#ctx = ctx;
    this.#flags = flags;
    this.#eol = flags.crlf ? '\r\n' : '\n';
    this.#stopped = new Promise((resolve) => {
      this.#stop = resolve;
    });
  }

  async run(): Promise<number> {
    const ctx = this.#ctx;
    const flags = this.#flags;
    if (flags.ignoreSigterm) {
      ctx.onSignal('SIGTERM', () => {
        ctx.stderr.write(`${FAKE_MCP_SERVER_NAME}: ignoring SIGTERM\n`).catch(() => undefined);
      });
    }
    if (flags.startDelayMs > 0) await ctx.sleep(flags.startDelayMs);
    if (flags.stderrFloodBytes > 0) await this.#flood(flags.stderrFloodBytes);
    if (flags.noise) await this.#send(`${FAKE_MCP_SERVER_NAME}: starting (this line is not JSON)`);
    if (flags.exitAfter === 0) return flags.exitCode;
    const eof = this.#readLoop().then(async () => {
      await Promise.all(this.#inflight);
      await this.#out;
      if (!flags.ignoreEof) return 0;
      await ctx.stderr.write(`${FAKE_MCP_SERVER_NAME}: stdin ended; ignoring EOF\n`);
      await ctx.sleep(Number.POSITIVE_INFINITY);
      return 0;
    });
    return Promise.race([eof, this.#stopped]);
  }

  async #readLoop(): Promise<void> {
    // A line not ended yet waits in PendingBytes (small chunks merged) and is joined once its
    // newline arrives, so a long line that comes in many small chunks costs linear time and about
    // its size in memory. Whole lines are decoded, so a character split across chunks stays whole.
    const pending = new PendingBytes();
    for await (const chunk of this.#ctx.stdin) {
      let start = 0;
      let newline = chunk.indexOf(10);
      while (newline !== -1) {
        this.#line(pending.takeAll(chunk.subarray(start, newline)));
        start = newline + 1;
        newline = chunk.indexOf(10, start);
      }
      if (start < chunk.length) pending.append(chunk.subarray(start));
      // Bounded memory: while the client does not read our answers, stop reading its requests,
      // so backpressure reaches the client's writes as it would through a real server.
      if (this.#queued > MAX_QUEUED_LINES) await this.#out;
    }
    this.#line(pending.takeAll());
  }

  #line(bytes: Uint8Array): void {
    let line = decoder.decode(bytes);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.trim() !== '') this.#dispatch(line);
  }

  #dispatch(line: string): void {
    const task = this.#handle(line).catch((error: unknown) => {
      // Output failed (reader gone or process killed): nothing more can be said.
      this.#stop(1);
      void this.#ctx.stderr
        .write(`${FAKE_MCP_SERVER_NAME}: ${error instanceof Error ? error.message : String(error)}\n`)
        .catch(() => undefined);
    });
    this.#inflight.add(task);
    void task.finally(() => this.#inflight.delete(task));
  }

  async #handle(line: string): Promise<void> {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      await this.#reply('null', undefined, new RpcError(-32700, 'Parse error'));
      return;
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      await this.#reply('null', undefined, new RpcError(-32600, 'Invalid Request: not a JSON-RPC object'));
      return;
    }
    const record = message as Record<string, unknown>;
    const rawId = rawJsonMember(line, 'id');
    if (typeof record.method !== 'string') {
      // A response to a request of ours (we send none) is ignored; anything else is invalid.
      if ('result' in record || 'error' in record) return;
      await this.#reply(rawId ?? 'null', undefined, new RpcError(-32600, 'Invalid Request: no method'));
      return;
    }
    const params = isObject(record.params) ? record.params : {};
    if (rawId === undefined) {
      this.#notification(record.method, params);
      return;
    }
    let result: unknown;
    try {
      result = await this.#request(record.method, params, normalizeId(record.id));
    } catch (error) {
      if (!(error instanceof RpcError)) throw error;
      await this.#reply(rawId, undefined, error);
      return;
    }
    if (result === CANCELLED) return;
    // A 2026-07-28 result says whether it is complete (it may instead ask the client for input).
    const modern = record.method === 'server/discover' || isModern(params);
    await this.#reply(
      rawId,
      modern && isObject(result) ? { ...result, resultType: 'complete' } : result,
      undefined,
    );
  }

  #notification(method: string, params: Record<string, unknown>): void {
    if (method === 'notifications/cancelled' && 'requestId' in params) {
      this.#cancellable.get(normalizeId(params.requestId))?.abort();
    }
    // notifications/initialized and the rest need no action.
  }

  async #request(method: string, params: Record<string, unknown>, id: string): Promise<unknown> {
    switch (method) {
      case 'initialize':
        return {
          protocolVersion:
            typeof params.protocolVersion === 'string'
              ? params.protocolVersion
              : FAKE_MCP_DEFAULT_PROTOCOL_VERSION,
          capabilities: { tools: { listChanged: false } },
          serverInfo: FAKE_SERVER_INFO,
        };
      case 'server/discover':
        return {
          supportedVersions: [FAKE_MCP_MODERN_PROTOCOL_VERSION],
          capabilities: { tools: { listChanged: false } },
          _meta: { 'io.modelcontextprotocol/serverInfo': FAKE_SERVER_INFO },
        };
      case 'ping':
        return {};
      case 'tools/list':
        // 2026-07-28 lists carry cache hints; this list may not be cached.
        return isModern(params)
          ? { tools: FAKE_MCP_TOOLS, ttlMs: 0, cacheScope: 'private' }
          : { tools: FAKE_MCP_TOOLS };
      case 'tools/call':
        return this.#callTool(params, id);
      default:
        throw new RpcError(-32601, `Method not found: ${method}`);
    }
  }

  async #callTool(params: Record<string, unknown>, id: string): Promise<ToolResult | typeof CANCELLED> {
    const args = isObject(params.arguments) ? params.arguments : {};
    const text = (value: string): ToolResult => ({ content: [{ type: 'text', text: value }] });
    const invalid = (why: string): ToolResult => ({
      content: [{ type: 'text', text: `invalid arguments: ${why}` }],
      isError: true,
    });
    switch (params.name) {
      case 'echo':
        return typeof args.text === 'string' ? text(args.text) : invalid('text must be a string');
      case 'add':
        return typeof args.a === 'number' && typeof args.b === 'number'
          ? text(String(args.a + args.b))
          : invalid('a and b must be numbers');
      case 'get-env':
        return text(JSON.stringify(this.#ctx.env));
      case 'slow': {
        const ms = args.ms;
        if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return invalid('ms must be >= 0');
        const cancel = new AbortController();
        this.#cancellable.set(id, cancel);
        try {
          const done = await Promise.race([
            this.#ctx.sleep(ms).then(() => true),
            new Promise<false>((resolve) => cancel.signal.addEventListener('abort', () => resolve(false))),
          ]);
          return done ? text(`slept ${ms} ms`) : CANCELLED;
        } finally {
          this.#cancellable.delete(id);
        }
      }
      case 'big': {
        const bytes = args.bytes;
        if (
          typeof bytes !== 'number' ||
          !Number.isInteger(bytes) ||
          bytes < 0 ||
          bytes > FAKE_MCP_MAX_BIG_BYTES
        ) {
          return invalid(`bytes must be an integer from 0 to ${FAKE_MCP_MAX_BIG_BYTES}`);
        }
        return text('x'.repeat(bytes));
      }
      default:
        throw new RpcError(-32602, `Unknown tool: ${String(params.name)}`);
    }
  }

  /** Writes one response; counts it for `--exit-after`. */
  async #reply(rawId: string, result: unknown, error: RpcError | undefined): Promise<void> {
    const body =
      error === undefined
        ? `"result":${JSON.stringify(result)}`
        : `"error":${JSON.stringify({ code: error.rpcCode, message: error.message })}`;
    // Numbered when queued, so --exit-after answers exactly n even with requests in flight.
    const number = ++this.#answered;
    const { exitAfter } = this.#flags;
    if (exitAfter !== undefined && number > exitAfter) return;
    if (this.#flags.noise) {
      const n = ++this.#noiseCount;
      // Alternate plain text and a broken JSON fragment: both are not JSON.
      await this.#send(n % 2 === 1 ? `noise ${n}: this line is not JSON` : `{"noise": ${n}, broken`);
    }
    await this.#send(`{"jsonrpc":"2.0","id":${rawId},${body}}`);
    if (number === exitAfter) this.#stop(this.#flags.exitCode);
  }

  /** Queues a line on stdout; lines never interleave, even when dribbled. */
  #send(line: string): Promise<void> {
    const bytes = encoder.encode(line + this.#eol);
    const write = async () => {
      if (!this.#flags.dribble) return this.#ctx.stdout.write(bytes);
      for (let i = 0; i < bytes.length; i++) await this.#ctx.stdout.write(bytes.subarray(i, i + 1));
    };
    this.#queued++;
    const result = this.#out.then(write).finally(() => {
      this.#queued--;
    });
    this.#out = result.catch(() => undefined);
    return result;
  }

  async #flood(total: number): Promise<void> {
    const line = `${FAKE_MCP_SERVER_NAME}: stderr flood ${'.'.repeat(49)}\n`;
    const block = encoder.encode(line.repeat(Math.ceil(65536 / line.length)));
    for (let left = total; left > 0; left -= block.length) {
      await this.#ctx.stderr.write(left >= block.length ? block : block.subarray(0, left));
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A map key for an id; only used to match cancellations, never echoed. */
function normalizeId(id: unknown): string {
  return JSON.stringify(id) ?? 'undefined';
}

const FAKE_SERVER_INFO = { name: FAKE_MCP_SERVER_NAME, version: FAKE_MCP_SERVER_VERSION };

/** Whether a request claims the 2026-07-28 era: its `_meta` names that protocol version. */
function isModern(params: Record<string, unknown>): boolean {
  const meta = params._meta;
  if (!isObject(meta)) return false;
  const version = meta['io.modelcontextprotocol/protocolVersion'];
  return typeof version === 'string' && version >= FAKE_MCP_MODERN_PROTOCOL_VERSION;
}
