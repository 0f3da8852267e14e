import { execFileSync } from 'node:child_process';
import type { KillSignal } from '@mcpsandbox/core';

/** One row of `ps -axo pid=,ppid=,pgid=,lstart=`. */
export interface PsRow {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  /** When it started, in whole seconds (`lstart`), when ps said. */
  readonly start?: number;
}

const ROW = /^\s*(\d{1,10})\s+(\d{1,10})\s+(\d{1,10})(?:\s+(\S.*))?$/;

/** Parses `ps -axo pid=,ppid=,pgid=,lstart=` (C locale); other lines are skipped. */
export function parsePs(text: string): PsRow[] {
  const rows: PsRow[] = [];
  for (const line of text.split('\n')) {
    const match = ROW.exec(line);
    if (!match) continue;
    const started = match[4] === undefined ? Number.NaN : Date.parse(match[4]) / 1000;
    rows.push({
      pid: Number(match[1]),
      ppid: Number(match[2]),
      pgid: Number(match[3]),
      ...(Number.isFinite(started) ? { start: started } : {}),
    });
  }
  return rows;
}

/** Every live process (macOS and Linux `ps` take the same flags); empty when ps fails. */
export function psTable(): PsRow[] {
  try {
    const text = execFileSync('ps', ['-axo', 'pid=,ppid=,pgid=,lstart='], {
      encoding: 'latin1',
      timeout: 5_000,
      env: { ...process.env, LC_ALL: 'C' },
    });
    return parsePs(text);
  } catch {
    return [];
  }
}

/** A process group as a session records it: its id and its leader's start time. */
export interface GroupRecord {
  readonly pgid: number;
  readonly start: number;
}

/**
 * The recorded groups that are still the session's. A group id is its leader's pid: while the
 * leader lives with the recorded start time, or is gone and members remain (the id cannot be
 * reused while the group exists), the group is the session's; a leader with another start time
 * is a stranger that got the pid again.
 */
export function ownGroups(rows: readonly PsRow[], records: readonly GroupRecord[]): Set<number> {
  const own = new Set<number>();
  for (const record of records) {
    const leader = rows.find((row) => row.pid === record.pgid);
    if (leader && leader.start !== record.start) continue;
    own.add(record.pgid);
  }
  return own;
}

/**
 * The processes of a session: its process groups and every descendant of a group member (one
 * that called setsid() stays a descendant while its parent lives). macOS has no pid namespace:
 * a process that left the group and whose parent died is reparented to launchd and found by
 * neither; that is the gap the README states.
 */
export function sessionProcesses(rows: readonly PsRow[], groups: ReadonlySet<number>): number[] {
  const children = new Map<number, number[]>();
  for (const row of rows) children.set(row.ppid, [...(children.get(row.ppid) ?? []), row.pid]);
  const found = new Set(rows.filter((row) => groups.has(row.pgid)).map((row) => row.pid));
  const queue = [...found];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift() as number) ?? []) {
      if (found.has(child)) continue;
      found.add(child);
      queue.push(child);
    }
  }
  found.delete(process.pid);
  return [...found];
}

/** Signals each group and process; a group or process already gone is no error. */
export function signalAll(groups: Iterable<number>, pids: Iterable<number>, signal: KillSignal): void {
  for (const group of groups) tryKill(-group, signal);
  for (const pid of pids) tryKill(pid, signal);
}

function tryKill(target: number, signal: KillSignal): void {
  if (target === 0 || target === 0 || Math.abs(target) === 1 || Math.abs(target) === process.pid) return;
  try {
    process.kill(target, signal);
  } catch {
    // gone already
  }
}
