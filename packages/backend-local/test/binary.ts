import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built `mcp-sandbox` binary (apps/cli), as a client starts it. The root build makes it first. */
export const BIN = fileURLToPath(new URL('../../../apps/cli/dist/bin.js', import.meta.url));

export interface Bridge {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stderr: () => string;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `mcp-sandbox run -q <args>` with raw stdio and a minimal environment. */
export function startBridge(args: readonly string[]): Bridge {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build the repository first (turbo run build)`);
  const child = spawn(process.execPath, [BIN, 'run', '-q', ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout.resume();
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  return { child, stderr: () => stderr, exit };
}

export async function waitUntil(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A directory anyone may enter (the sandbox runs as nobody when the tests run as root). */
export function openTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

/** Compiles a C fixture with gcc into `dir`; the test machine (and CI) has gcc. */
export function compileFixture(name: string, dir: string): string {
  const source = fileURLToPath(new URL(`./fixtures/${name}.c`, import.meta.url));
  const out = join(dir, name);
  execFileSync('gcc', ['-O1', '-o', out, source], { stdio: ['ignore', 'ignore', 'inherit'] });
  chmodSync(out, 0o755);
  return out;
}

/** Live (not zombie) processes whose command line contains `text`. */
export function processesWith(text: string): number[] {
  return livePids().filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(text);
    } catch {
      return false;
    }
  });
}

/** Live (not zombie) processes whose environment holds `entry` (`NAME=value`) as one variable. */
export function processesWithEnv(entry: string): number[] {
  const needle = Buffer.from(`${entry}\0`);
  return livePids().filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`).includes(needle);
    } catch {
      return false;
    }
  });
}

/** The pid namespace of a process, as `pid:[inode]`; undefined once it is gone. */
export function pidNamespaceOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return undefined;
  }
}

/** Every live process in that pid namespace, seen from here. */
export function processesInNamespace(namespace: string): number[] {
  return livePids().filter((pid) => pidNamespaceOf(pid) === namespace);
}

/** The host pid of a namespace's init (pid 1 inside). */
export function namespaceInit(namespace: string): number | undefined {
  return processesInNamespace(namespace).find((pid) => {
    const line = readStatus(pid).find((l) => l.startsWith('NSpid:'));
    return line?.trim().split(/\s+/).at(-1) === '1';
  });
}

function readStatus(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8').split('\n');
  } catch {
    return [];
  }
}

function livePids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .map(Number)
    .filter((pid) => {
      const state = readStatus(pid).find((l) => l.startsWith('State:'));
      return state !== undefined && !/\bZ\b/.test(state);
    });
}

/** Kills what a failed case left behind, so that one failure does not leak into the next. */
export function killAllOf(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
