import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN } from './helpers.js';

export const TOKEN = 'serve-test-token-0123456789abcdef';

export interface Served {
  readonly child: ChildProcess;
  readonly port: number;
  readonly url: string;
  readonly stderr: () => string;
  stop(): Promise<number | null>;
}

/** Starts `mcp-sandbox serve --port 0 <args> -- <command>` and waits until it listens. */
export async function startServe(
  args: string[],
  command: string[],
  env: Record<string, string | undefined> = {},
  tokenFile: string | null = writeToken(),
): Promise<Served> {
  const tokenArgs = tokenFile === null ? [] : ['--token-file', tokenFile];
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--port', '0', ...tokenArgs, ...args, '--', ...command],
    {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not listen:\n${stderr}`)), 30_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.on('exit', () => reject(new Error(`serve exited:\n${stderr}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export function writeToken(value = TOKEN): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-serve-'));
  const file = join(dir, 'token');
  writeFileSync(file, `${value}\n`, { mode: 0o600 });
  return file;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One raw HTTP request (node:http, so Host and Origin can be anything an attacker sends). */
export function raw(
  port: number,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer; path?: string },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'POST',
        path: options.path ?? '/mcp',
        headers: options.headers ?? {},
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      // The server may close a refused upload before it is all sent: not a client bug.
      if (error.code === 'EPIPE' || error.code === 'ECONNRESET') return;
      reject(error);
    });
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

export const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'attack-test', version: '1' },
  },
};

export function authed(port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    host: `127.0.0.1:${port}`,
    authorization: `Bearer ${TOKEN}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...extra,
  };
}

/** The serve process's resident memory (VmRSS, bytes) and open file descriptors, from /proc. */
export function procStats(pid: number): { rss: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
  return { rss, fds: readdirSync(`/proc/${pid}/fd`).length };
}

/** A 2026-07-28 stateless tools/call as raw HTTP, asking for an SSE answer. */
export function statelessCall(port: number, id: number, name: string, args: Record<string, unknown>): string {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name,
      arguments: args,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\n` +
    'Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n' +
    `Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: ${name}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/**
 * Sends `count` stateless SSE calls of `name` (`concurrency` at a time), each abandoned as soon as
 * its stream starts: what a client that goes away mid-call leaves behind. Resolves with how many
 * streams really started (the control: the requests were accepted, not refused).
 */
export async function abandonStateless(
  port: number,
  count: number,
  name: string,
  args: Record<string, unknown>,
  concurrency = 16,
): Promise<number> {
  let started = 0;
  let next = 0;
  const one = (id: number) =>
    new Promise<void>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(statelessCall(port, id, name, args)));
      let head = '';
      socket.on('data', (chunk: Buffer) => {
        head += chunk.toString();
        if (!head.includes('\r\n\r\n')) return;
        if (head.startsWith('HTTP/1.1 200') && /text\/event-stream/i.test(head)) started++;
        socket.destroy();
        resolve();
      });
      socket.on('error', reject);
      socket.on('close', () => resolve());
    });
  const worker = async () => {
    while (next < count) await one(++next);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return started;
}

/**
 * Opens a connection that sends a request head and then trickles a chunked body, one byte every
 * `everyMs`, for as long as the server keeps the connection: resolves with the status the server
 * answered (0 if none) once the server closes it, or with `null` after `waitMs` if it never does.
 */
export function trickle(
  port: number,
  headers: Record<string, string>,
  waitMs: number,
  everyMs = 100,
): Promise<{ status: number } | null> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const head = Object.entries({ host: `127.0.0.1:${port}`, 'transfer-encoding': 'chunked', ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.write(`POST /mcp HTTP/1.1\r\n${head}\r\n`);
    const drip = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write('1\r\n{\r\n');
    }, everyMs);
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    socket.on('error', () => {});
    const finish = (value: { status: number } | null) => {
      clearInterval(drip);
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    socket.on('close', () => finish({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0) }));
    const timer = setTimeout(() => finish(null), waitMs);
  });
}

/** Opens a connection that sends nothing, and reports when the server closes it. */
export function idle(port: number): { closed: Promise<void>; socket: Socket } {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { closed, socket };
}

/** serve's numbers once its descriptors are down to `limit` (or after 10 s, when they are not). */
export async function settled(pid: number, limit: number): Promise<{ rss: number; fds: number }> {
  let stats = procStats(pid);
  for (let i = 0; i < 100 && stats.fds > limit; i++) {
    await new Promise((r) => setTimeout(r, 100));
    stats = procStats(pid);
  }
  return stats;
}
