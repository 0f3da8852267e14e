/**
 * The install cache's quota: how much one entry (one package's install) and the whole cache may
 * hold, in files and bytes. Install scripts write into their entry; without a bound one package
 * could fill the disk, and the host would seal every file it wrote. Enforced while each install
 * step runs (npx/watchdog.ts) and again, exactly, by the seal when nothing writes any more.
 */
import { SandboxFailureError, UsageError } from '@mcpsandbox/core';
import type { TreeLimit, TreeOver } from '../tree-usage.js';

export interface InstallQuota {
  /** One cache entry (one package with its dependencies and what its install scripts wrote). */
  readonly entry: TreeLimit;
  /** Every entry of the cache root together. */
  readonly total: TreeLimit;
}

/**
 * Measured on real servers (npm install, apparent size): server-everything 4,500 files / 22 MB,
 * server-filesystem 4,700 / 28 MB, context7 7,400 / 45 MB, the playwright server 23,000 / 149 MB.
 * An entry may hold about ten times the largest of them.
 */
export const DEFAULT_INSTALL_QUOTA: InstallQuota = {
  entry: { files: 200_000, bytes: 2 * 2 ** 30 },
  total: { files: 1_000_000, bytes: 10 * 2 ** 30 },
};

/** The environment variables that raise (or lower) each limit. */
export const QUOTA_VARIABLES = {
  entry: { files: 'MCP_SANDBOX_INSTALL_MAX_FILES', bytes: 'MCP_SANDBOX_INSTALL_MAX_BYTES' },
  total: { files: 'MCP_SANDBOX_INSTALL_CACHE_MAX_FILES', bytes: 'MCP_SANDBOX_INSTALL_CACHE_MAX_BYTES' },
} as const;

const SIZE_UNITS: Record<string, number> = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 };

/** `1048576`, `64M`, `512MiB`, `1G`: binary units, at least 4096. Undefined for anything else. */
export function parseByteSize(text: string): number | undefined {
  const match = /^(\d+)\s*([kmg]?)(?:i?b)?$/i.exec(text.trim());
  if (!match) return undefined;
  const bytes = Number(match[1]) * (SIZE_UNITS[(match[2] ?? '').toLowerCase()] ?? Number.NaN);
  return Number.isSafeInteger(bytes) && bytes >= 4096 ? bytes : undefined;
}

function parseCount(text: string): number | undefined {
  if (!/^\d{1,15}$/.test(text.trim())) return undefined;
  const count = Number(text.trim());
  return count > 0 ? count : undefined;
}

/** The quota from the environment (each variable optional), parsed once; a malformed one is a usage error. */
export function installQuota(env: Readonly<Record<string, string | undefined>>): InstallQuota {
  const read = (scope: 'entry' | 'total', unit: 'files' | 'bytes'): number => {
    const name = QUOTA_VARIABLES[scope][unit];
    const text = env[name];
    if (text === undefined || text === '') return DEFAULT_INSTALL_QUOTA[scope][unit];
    const value = unit === 'files' ? parseCount(text) : parseByteSize(text);
    if (value === undefined) {
      const form =
        unit === 'files' ? 'a positive whole number' : 'a size such as 512M or 4G (at least 4096 bytes)';
      throw new UsageError(`${name} must be ${form}, not ${JSON.stringify(text.slice(0, 40))}`);
    }
    return value;
  };
  const entry = { files: read('entry', 'files'), bytes: read('entry', 'bytes') };
  const total = { files: read('total', 'files'), bytes: read('total', 'bytes') };
  return { entry, total };
}

/** An install went (or would go) past the quota: stopped, and nothing of it kept. */
export class InstallQuotaError extends SandboxFailureError {
  constructor(message: string) {
    super(message, { code: 'E_INSTALL_QUOTA' });
    this.name = 'InstallQuotaError';
  }
}

export function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10],
  ] as const) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} bytes`;
}

function amount(unit: 'files' | 'bytes', value: number): string {
  return unit === 'files' ? `${value} files` : formatBytes(value);
}

/** What one install may still write: its entry's limit, or less when the cache is nearly full. */
export interface InstallBudget {
  readonly limit: TreeLimit;
  /** For each unit, whether the limit is the cache's total (what is left of it) rather than the entry's. */
  readonly fromTotal: { readonly files: boolean; readonly bytes: boolean };
  readonly quota: InstallQuota;
  /** The cache root, for the message. */
  readonly cacheRoot: string;
}

export function installBudget(quota: InstallQuota, used: TreeLimit, cacheRoot: string): InstallBudget {
  const left = { files: quota.total.files - used.files, bytes: quota.total.bytes - used.bytes };
  return {
    limit: { files: Math.min(quota.entry.files, left.files), bytes: Math.min(quota.entry.bytes, left.bytes) },
    fromTotal: { files: left.files < quota.entry.files, bytes: left.bytes < quota.entry.bytes },
    quota,
    cacheRoot,
  };
}

/** The refusal: the package, the limit it went past, and how to raise it (or make room). */
export function quotaError(spec: string, budget: InstallBudget, over: TreeOver): InstallQuotaError {
  if (over === 'depth' || over === 'unreadable') {
    const what =
      over === 'depth' ? 'a tree deeper than any real package' : 'a directory the host cannot read';
    return new InstallQuotaError(`the install of ${spec} was stopped: its scripts left ${what}`);
  }
  if (budget.fromTotal[over]) {
    const name = QUOTA_VARIABLES.total[over];
    const limit = amount(over, budget.quota.total[over]);
    return new InstallQuotaError(
      `the install of ${spec} was stopped: it would take the install cache (${budget.cacheRoot}) past its total limit of ${limit}. ` +
        `Remove entries you no longer need (each is installed again on its next start: rm -rf ${budget.cacheRoot}/<entry>), ` +
        `or raise the limit: ${name}=<more>`,
    );
  }
  const name = QUOTA_VARIABLES.entry[over];
  const limit = amount(over, budget.limit[over]);
  const standard = amount(over, DEFAULT_INSTALL_QUOTA.entry[over]);
  return new InstallQuotaError(
    `the install of ${spec} wrote more than ${limit}, the limit for one package in the install cache, and was stopped; ` +
      `nothing of it was kept. If the package really needs more, raise the limit in the environment of mcp-sandbox: ` +
      `${name}=<more> (default ${standard})`,
  );
}

/** Refused before it starts: the cache holds its total already. */
export function cacheFullError(spec: string, budget: InstallBudget): InstallQuotaError | undefined {
  if (budget.limit.files > 0 && budget.limit.bytes > 0) return undefined;
  return quotaError(spec, budget, budget.limit.files <= 0 ? 'files' : 'bytes');
}
