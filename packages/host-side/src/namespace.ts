import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * The init of one sandbox's pid namespace (bwrap's pid 1), as the host sees it. Killing it makes
 * the kernel kill every process of the namespace, whatever they did to their parent-death
 * signals; so close() kills the init itself rather than trusting `--die-with-parent`.
 */
export interface NamespaceInit {
  readonly pid: number;
  /** Start time in clock ticks since boot (/proc/<pid>/stat field 22): tells a reused pid apart. */
  readonly startTime: string;
  /** `pid:[inode]` of the namespace, to look for anything left in it (unreadable when the init
   * is not ours to inspect, as with a setuid bubblewrap). */
  readonly namespace?: string;
}

/**
 * Identifies the process bwrap reported as its child: it must be the init of a pid namespace
 * other than ours. Undefined when it is already gone (then so is its namespace).
 */
export function identifyInit(pid: number): NamespaceInit | undefined {
  const stat = readStat(pid);
  // "NSpid: <pid here> … 1": a pid in each namespace from ours down, 1 in its own.
  const nsPid = readStatusField(pid, 'NSpid')?.split(/\s+/);
  if (!stat || !nsPid || nsPid.length < 2 || nsPid.at(-1) !== '1') return undefined;
  const namespace = pidNamespace(pid);
  return { pid, startTime: stat.startTime, ...(namespace ? { namespace } : {}) };
}

/** True while the init (the same process, not a reused pid) has not exited. */
function isAlive(init: NamespaceInit): boolean {
  const stat = readStat(init.pid);
  return stat !== undefined && stat.startTime === init.startTime && stat.state !== 'Z';
}

/** SIGKILLs the init if it is still the same process; returns false when it is gone. */
export function killInit(init: NamespaceInit): boolean {
  if (!isAlive(init)) return false;
  try {
    process.kill(init.pid, 'SIGKILL');
  } catch {
    return false;
  }
  return true;
}

/**
 * Kills the namespace through its init, waits until the init is dead (the kernel has then
 * killed and reaped the rest), and returns the pids of any process still found in the
 * namespace, each sent SIGKILL too. An empty list is the expected answer. An init already dead
 * took its namespace with it: nothing to look for then.
 */
export async function endNamespace(init: NamespaceInit, timeoutMs = 5_000): Promise<number[]> {
  if (!isAlive(init)) return [];
  const deadline = Date.now() + timeoutMs;
  while (killInit(init) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const left = init.namespace ? processesIn(init.namespace) : [];
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return left;
}

/** Live processes in a pid namespace, by host pid. */
export function processesIn(namespace: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => pidNamespace(pid) === namespace && readStat(pid)?.state !== 'Z');
}

function pidNamespace(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return undefined;
  }
}

function readStat(pid: number): { state: string; startTime: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTime = fields[19];
  return state && startTime ? { state, startTime } : undefined;
}

function readStatusField(pid: number, field: string): string | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field}:`));
    return line?.slice(field.length + 1).trim();
  } catch {
    return undefined;
  }
}
