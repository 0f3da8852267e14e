// Reading a process's memory from /proc (Linux): VmRSS now, VmHWM the peak so far.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** `{ rssKiB, hwmKiB }` of `pid`, or undefined when it is gone or /proc is absent. */
export function memoryOf(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const field = (name) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Number(match[1]) : undefined;
  };
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export const mb = (kib) => (kib === undefined ? undefined : Math.round((kib / 1024) * 10) / 10);

let ticksPerSecond;
function clockTicks() {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU time (user + system) `pid` has used so far, in ms; undefined when unknown. */
export function cpuMsOf(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name (which may hold spaces) start at state, field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / clockTicks();
}
