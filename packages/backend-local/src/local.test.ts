import { describe, expect, it } from 'vitest';
import { createLocalBackend } from './local.js';
import { parseByteSize } from './settings.js';

describe('parseByteSize', () => {
  it('takes bytes and binary units', () => {
    expect(parseByteSize('1048576')).toBe(2 ** 20);
    expect(parseByteSize('64M')).toBe(64 * 2 ** 20);
    expect(parseByteSize('512MiB')).toBe(512 * 2 ** 20);
    expect(parseByteSize('1g')).toBe(2 ** 30);
    expect(parseByteSize('8k')).toBe(8192);
  });

  it('refuses anything else, and sizes too small for a tmpfs', () => {
    for (const text of ['', 'lots', '-1M', '1.5G', '1T', '100', '1M;rm']) {
      expect(parseByteSize(text), text).toBeUndefined();
    }
  });

  it('a bad tmpSize or shmSize backend option is a usage error naming the option', () => {
    expect(() => createLocalBackend({ settings: { shmSize: 'lots' } })).toThrow(/shmSize must be a size/);
    expect(() => createLocalBackend({ settings: { tmpSize: '0' } })).toThrow(/tmpSize must be a size/);
  });
});
