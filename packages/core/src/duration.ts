import { UsageError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A session's lifetime when `--ttl` is not given. */
export const DEFAULT_TTL = '30m';

/** Parses `500ms`, `90s`, `10m`, `2h` (a bare number is seconds) into milliseconds. */
export function parseDuration(text: string, flag = 'duration'): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match)
    throw new UsageError(`${flag} ${JSON.stringify(text)}: expected a duration such as 90s, 10m or 2h`);
  const ms = Number(match[1]) * (UNITS[match[2] ?? 's'] as number);
  if (!(ms > 0) || ms > 2 ** 31 - 1) {
    throw new UsageError(`${flag} ${JSON.stringify(text)}: must be more than 0 and at most 24 days`);
  }
  return Math.round(ms);
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
