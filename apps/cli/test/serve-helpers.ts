import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
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
