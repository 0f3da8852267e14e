import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// The built binary and the CLI's hostile fixtures: these tests drive `mcp-sandbox run --backend
// srt` as a user would (build the workspace first: `pnpm build`).
export const BIN = fileURLToPath(new URL('../../../apps/cli/dist/bin.js', import.meta.url));
export const CLI_FIXTURES = fileURLToPath(new URL('../../../apps/cli/test/fixtures/', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build the workspace first (pnpm build)`);

export interface Connected {
  readonly client: Client;
  readonly stderr: () => string;
}

/** The real SDK client over `mcp-sandbox run <args>`, client capabilities pinned to none. */
export async function connect(
  args: readonly string[],
  env: Record<string, string>,
  options: { readonly cwd?: string } = {},
): Promise<Connected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'run', ...args],
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'backend-srt-test', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${stderr}`);
  }
  return { client, stderr: () => stderr };
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
}

/** The binary with raw stdio, for tests that speak bytes. */
export function spawnBin(args: readonly string[], env: Record<string, string | undefined>) {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const result = new Promise<RunResult>((resolve) => {
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(stdout), stderr }));
  });
  return { child, result, stdoutSoFar: () => Buffer.concat(stdout), stderrSoFar: () => stderr };
}

export async function waitFor(check: () => boolean, ms: number, what: string): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Live (not zombie) processes whose environment holds `marker`. */
export function processesWithMarker(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`).includes(marker)) continue;
      if (!/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${entry}/stat`, 'utf8'))) found.push(Number(entry));
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

export const textOf = (result: unknown): string =>
  ((result as { content?: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? '').join('\n');
