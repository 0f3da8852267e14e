import type { ResourceLimits } from '@mcpsandbox/core';

export interface LimitPlan {
  /** Arguments for `prlimit` inside the sandbox (soft = hard, so the server cannot raise them). */
  readonly prlimitArgs: readonly string[];
  readonly enforced: Readonly<Record<string, number>>;
  /** Requested limits that this machine cannot enforce. */
  readonly notEnforced: readonly string[];
  /** One line each for stderr: what is weaker than asked, and why. */
  readonly notes: readonly string[];
}

export interface LimitContext {
  readonly prlimit: boolean;
  readonly defaultMaxProcesses: number;
  /** The host's hard limits (from /proc/self/limits); an unprivileged sandbox cannot exceed them. */
  readonly hardLimits: Readonly<Record<string, number | undefined>>;
}

/**
 * Plans the rlimits set inside the sandbox, after bwrap has made its user namespace, so that
 * the process count is counted for this sandbox alone (RLIMIT_NPROC is per user and user
 * namespace) rather than for every process of the same host user.
 */
export function planLimits(requested: ResourceLimits | undefined, context: LimitContext): LimitPlan {
  const wanted: Array<[key: 'nproc' | 'nofile' | 'data', label: string, value: number | undefined]> = [
    ['nproc', 'maxProcesses', requested?.maxProcesses ?? context.defaultMaxProcesses],
    ['nofile', 'openFiles', requested?.openFiles],
    ['data', 'memoryBytes', requested?.memoryBytes],
  ];
  const prlimitArgs: string[] = [];
  const enforced: Record<string, number> = {};
  const notEnforced: string[] = [];
  const notes: string[] = [];
  for (const [key, label, value] of wanted) {
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value <= 0) {
      notes.push(`limit ${label}=${value} is not a positive integer; ignored`);
      notEnforced.push(label);
      continue;
    }
    if (!context.prlimit) {
      notes.push(`limit ${label}=${value} cannot be enforced: prlimit (util-linux) is not installed`);
      notEnforced.push(label);
      continue;
    }
    let effective = value;
    const hard = context.hardLimits[key];
    if (hard !== undefined && hard < value) {
      notes.push(`limit ${label}=${value} is above this host's hard limit; using ${hard}`);
      effective = hard;
    }
    prlimitArgs.push(`--${key}=${effective}:${effective}`);
    enforced[label] = effective;
  }
  if (enforced.memoryBytes !== undefined) {
    notes.push(
      `limit memoryBytes is enforced per process (RLIMIT_DATA), not as a total for the sandbox: ` +
        'that would need a delegated cgroup, which an unprivileged process does not have here',
    );
  }
  return { prlimitArgs, enforced, notEnforced, notes };
}
