import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { identifyInit, type NamespaceInit } from '@mcpsandbox/host-side';

/** Parent of each live process, from /proc (Linux) or `ps` (macOS); empty when neither works. */
function parents(): Map<number, number> {
  const map = new Map<number, number>();
  if (process.platform === 'linux') {
    for (const name of safeList('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
        // The command name may hold spaces and parentheses: fields start after the last ')'.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        map.set(Number(name), Number(fields[1]));
      } catch {
        // gone meanwhile
      }
    }
    return map;
  }
  try {
    const text = execFileSync('ps', ['-axo', 'pid=,ppid='], { encoding: 'latin1', timeout: 5_000 });
    for (const line of text.split('\n')) {
      const [pid, ppid] = line.trim().split(/\s+/).map(Number);
      if (pid && ppid !== undefined && Number.isSafeInteger(ppid)) map.set(pid, ppid);
    }
  } catch {
    // no ps: the process group is all we can reach
  }
  return map;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Every live descendant of `root`, nearest first. */
export function descendants(root: number): number[] {
  const byParent = new Map<number, number[]>();
  for (const [pid, ppid] of parents()) byParent.set(ppid, [...(byParent.get(ppid) ?? []), pid]);
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const next = queue.shift() as number;
    for (const child of byParent.get(next) ?? []) {
      if (found.includes(child)) continue;
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/**
 * The pid-namespace init that srt's bubblewrap made below `root` (Linux), found as soon as it
 * exists: killing it makes the kernel kill everything in the namespace, whatever the processes
 * inside did to their parents. Undefined on macOS, or when the process ended first.
 */
export async function findNamespaceInit(
  root: number,
  stillRunning: () => boolean,
  timeoutMs = 5_000,
): Promise<NamespaceInit | undefined> {
  if (process.platform !== 'linux') return undefined;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && stillRunning()) {
    for (const pid of descendants(root)) {
      const init = identifyInit(pid);
      if (init) return init;
    }
    await new Promise((resolve) => setTimeout(resolve, 40));
  }
  return undefined;
}

/** The session id of a process (Linux), undefined when it is gone. */
export function sessionOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
  } catch {
    return undefined;
  }
}

/** The processes below `init` in sessions of their own: the command (see `innerCommand`) and its tree. */
export function commandTree(init: number): number[] {
  const own = sessionOf(init);
  return descendants(init).filter((pid) => {
    const session = sessionOf(pid);
    return session !== undefined && session !== own;
  });
}

/** Sends `signal` to each pid, ignoring those already gone. */
export function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
