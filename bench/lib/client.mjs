// A minimal JSON-RPC client over raw pipes: pre-serialized requests out, responses matched by id.
// It does as little per message as it can, so the figures are the bridge's and the server's.
import { spawn } from 'node:child_process';
import { once } from 'node:events';

/** Lines up to this size are kept whole (to read an id that comes late); longer ones only counted. */
const KEEP_WHOLE_BYTES = 256 * 1024;
const FAST_PREFIX = Buffer.from('{"jsonrpc":"2.0","id":');
const METHOD_KEY = Buffer.from('"method"');
const TAIL_BYTES = 64;
const TAIL_ID = /"id":(\d+)\}\r?$/;
const EMPTY = Buffer.alloc(0);

/** `{"jsonrpc":"2.0","id":<id>,"method":"tools/call","params":{...}}\n` as bytes. */
export function toolCall(id, name, args) {
  return Buffer.from(
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${JSON.stringify(args)}}}\n`,
  );
}

export function initializeRequest(id) {
  return Buffer.from(
    `{"jsonrpc":"2.0","id":${id},"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}}}\n`,
  );
}

/**
 * Spawns `argv` with piped stdio and speaks line-delimited JSON-RPC to it. Responses resolve the
 * promise registered for their numeric id; notifications and other lines are counted.
 */
export class RawClient {
  /** @param {string[]} argv */
  constructor(argv, { env = process.env, cwd, nodeOptions = [] } = {}) {
    const [file, ...args] = argv;
    this.spawnedAt = process.hrtime.bigint();
    this.child = spawn(file, [...nodeOptions, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env, cwd });
    this.pid = this.child.pid;
    this.pending = new Map();
    this.bytesIn = 0;
    this.linesIn = 0;
    this.notifications = 0;
    this.stderrTail = '';
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => resolve({ code, signal }));
      this.child.once('error', (error) => resolve({ code: null, signal: null, error }));
    });
    this.child.stdin.on('error', () => undefined);
    this.child.stderr.on('data', (chunk) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-4000);
    });
    this.#parts = [];
    this.#lineBytes = 0;
    this.child.stdout.on('data', (chunk) => this.#onData(chunk));
  }

  #parts;
  #lineBytes;
  #tail = EMPTY;

  #onData(chunk) {
    this.bytesIn += chunk.length;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) {
        if (start < chunk.length) this.#keep(chunk.subarray(start));
        return;
      }
      this.#keep(chunk.subarray(start, nl));
      start = nl + 1;
      const parts = this.#parts;
      const size = this.#lineBytes;
      const tail = this.#tail;
      this.#parts = [];
      this.#lineBytes = 0;
      this.#tail = EMPTY;
      this.#line(parts, size, tail);
    }
  }

  #keep(piece) {
    if (this.#lineBytes <= KEEP_WHOLE_BYTES || this.#parts.length === 0) this.#parts.push(piece);
    this.#lineBytes += piece.length;
    // The last bytes of a line too long to keep: the MCP SDK writes the id last.
    this.#tail =
      piece.length >= TAIL_BYTES
        ? piece.subarray(piece.length - TAIL_BYTES)
        : Buffer.concat([this.#tail, piece]).subarray(-TAIL_BYTES);
  }

  #line(parts, size, tail) {
    this.linesIn++;
    const first = parts[0];
    let id;
    if (
      first &&
      first.length > FAST_PREFIX.length + 1 &&
      first.compare(FAST_PREFIX, 0, FAST_PREFIX.length, 0, FAST_PREFIX.length) === 0
    ) {
      // The fake server's shape: the id follows the prefix.
      let i = FAST_PREFIX.length;
      let n = 0;
      let digits = 0;
      for (; i < first.length; i++) {
        const c = first[i];
        if (c < 48 || c > 57) break;
        n = n * 10 + (c - 48);
        digits++;
      }
      if (digits > 0 && first[i] === 44) id = n;
    }
    if (id === undefined && size <= KEEP_WHOLE_BYTES && !first?.subarray(0, 64).includes(METHOD_KEY)) {
      try {
        const message = JSON.parse(Buffer.concat(parts).toString());
        if (typeof message.id === 'number' && ('result' in message || 'error' in message)) id = message.id;
      } catch {
        // not JSON: counted as a line only
      }
    }
    if (id === undefined && size > KEEP_WHOLE_BYTES) {
      const match = TAIL_ID.exec(tail.latin1Slice(0, tail.length));
      if (match) id = Number(match[1]);
    }
    if (id === undefined) {
      this.notifications++;
      this.onNotification?.(size);
      return;
    }
    const waiter = this.pending.get(id);
    if (waiter === undefined) return;
    this.pending.delete(id);
    waiter(size);
  }

  /** Sends a pre-serialized request and resolves with the response line's size in bytes. */
  call(id, bytes) {
    const result = new Promise((resolve) => this.pending.set(id, resolve));
    this.child.stdin.write(bytes);
    return result;
  }

  /** Like `call`, but with a callback and no promise (for pipelined loops). */
  send(id, bytes, onResponse) {
    this.pending.set(id, onResponse);
    return this.child.stdin.write(bytes);
  }

  /** Closes stdin and waits for the process to end; kills it after `graceMs`. */
  async close(graceMs = 5_000) {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const status = await this.exited;
    clearTimeout(timer);
    return status;
  }

  kill() {
    this.child.kill('SIGKILL');
    return this.exited;
  }

  async waitSpawn() {
    await once(this.child, 'spawn');
  }
}
