/** Process facts the promise suite checks from the host (Linux /proc). */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** A process as seen once: its pid and its start time, so that a reused pid is not taken for it. */
export interface SeenProcess {
  readonly pid: number;
  readonly start: string;
  readonly name: string;
}

function stat(pid: number): { ppid: number; start: string; name: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const close = text.lastIndexOf(')');
    const fields = text.slice(close + 2).split(' ');
    // A zombie has ended: only its parent's wait is left.
    if (fields[0] === 'Z') return undefined;
    return {
      ppid: Number(fields[1]),
      start: fields[19] ?? '',
      name: text.slice(text.indexOf('(') + 1, close),
    };
  } catch {
    return undefined;
  }
}

/** Every live descendant of `root`. */
export function descendantsOf(root: number): SeenProcess[] {
  const children = new Map<number, number[]>();
  const facts = new Map<number, { start: string; name: string }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const found = stat(Number(name));
    if (!found) continue;
    facts.set(Number(name), found);
    children.set(found.ppid, [...(children.get(found.ppid) ?? []), Number(name)]);
  }
  const out: SeenProcess[] = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const pid of children.get(queue.shift() as number) ?? []) {
      const fact = facts.get(pid);
      if (fact) out.push({ pid, ...fact });
      queue.push(pid);
    }
  }
  return out;
}

/** Those of `seen` still running (same pid, same start time). */
export function stillRunning(seen: readonly SeenProcess[]): SeenProcess[] {
  return seen.filter((process) => stat(process.pid)?.start === process.start);
}

/** Live processes whose command line holds `text`. */
export function processesWith(text: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return stat(pid) !== undefined && readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(text);
      } catch {
        return false;
      }
    });
}

export async function waitUntil(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface Bridge {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The built binary, `run` with `args`, as a client starts it (optionally as another user first). */
export function startBridge(
  bin: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  asUser?: { readonly uid: number; readonly gid: number },
): Bridge {
  const argv = [bin, 'run', ...args];
  const child = asUser
    ? spawn(
        '/usr/bin/setpriv',
        [`--reuid=${asUser.uid}`, `--regid=${asUser.gid}`, '--clear-groups', '--', process.execPath, ...argv],
        { env, stdio: ['pipe', 'pipe', 'pipe'] },
      )
    : spawn(process.execPath, argv, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout.on('data', (chunk: Buffer) => {
    stdout = (stdout + chunk.toString()).slice(-65536);
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}
