import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { fakeMcpServerBinPath } from '@mcpsandbox/backend-fake';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const require = createRequire(import.meta.url);

/** The built binary, as a client would start it. */
export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
export const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');

export interface Connected {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
}

/** The real SDK client, spawning `mcp-sandbox run <args>` over stdio. Capabilities pinned to none. */
export async function connect(args: string[], env: Record<string, string> = {}): Promise<Connected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'run', ...args],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'mcp-sandbox-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

/** Spawns the binary with raw stdio, for tests that speak bytes rather than the SDK. */
export function spawnBin(
  args: string[],
  env: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd(),
) {
  const child = spawn(process.execPath, [BIN, ...args], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => stdout.push(c));
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const result = new Promise<RunResult>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout: Buffer.concat(stdout), stderr }));
  });
  return { child, result, stdoutSoFar: () => Buffer.concat(stdout), stderrSoFar: () => stderr };
}

/** Resolves once `predicate` holds for the stdout collected so far. */
export async function waitFor(check: () => boolean, ms = 20_000, what = 'condition'): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** PIDs of live processes whose environment holds `marker` (a unique value passed with --env). */
export function processesWithMarker(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`).includes(marker)) {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        if (!/^\d+ \(.*\) Z/.test(stat)) found.push(Number(entry));
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

export function traceRecords(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export function line(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}

/** The fake MCP server's executable, run as a real process under `none`. */
export const FAKE_SERVER = fakeMcpServerBinPath();

/** Whole lines of stdout, parsed. */
export function stdoutMessages(stdout: Buffer): Array<Record<string, unknown>> {
  const whole = stdout.subarray(0, stdout.lastIndexOf(10) + 1);
  return whole
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
