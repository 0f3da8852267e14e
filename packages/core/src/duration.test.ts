import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from './duration.js';
import { UsageError } from './errors.js';

describe('parseDuration', () => {
  it('reads ms, s, m, h and bare seconds', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('1.5')).toBe(1500);
  });

  it('refuses what it cannot read', () => {
    for (const bad of ['', 'ten', '10x', '0s', '-1s', '999h'])
      expect(() => parseDuration(bad, '--ttl')).toThrow(UsageError);
  });

  it('formats back', () => {
    expect(formatDuration(1_800_000)).toBe('30m');
    expect(formatDuration(2_500)).toBe('2500ms');
  });
});
