import { execFileSync } from 'node:child_process';
import type { KillSignal } from '@mcpsandbox/core';

/** One row of `ps -axo pid=,ppid=,pgid=`. */
export interface PsRow {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
}

/** Parses `ps -axo pid=,ppid=,pgid=`; lines that are not three numbers are skipped. */
export function parsePs(text: string): PsRow[] {
  const rows: PsRow[] = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length !== 3 || !fields.every((f) => /^\d{1,10}$/.test(f))) continue;
    const [pid, ppid, pgid] = fields.map(Number) as [number, number, number];
    rows.push({ pid, ppid, pgid });
  }
  return rows;
}

/** Every live process (macOS and Linux `ps` take the same flags); empty when ps fails. */
export function psTable(): PsRow[] {
  try {
    return parsePs(execFileSync('ps', ['-axo', 'pid=,ppid=,pgid='], { encoding: 'latin1', timeout: 5_000 }));
  } catch {
    return [];
  }
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
