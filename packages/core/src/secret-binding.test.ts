import { describe, expect, it } from 'vitest';
import { UsageError } from './errors.js';
import { bindSecret, makeStandIn, parseSecretFlag } from './secret-binding.js';

describe('parseSecretFlag', () => {
  it('parses NAME@host,host and the :body opt-in', () => {
    expect(parseSecretFlag('GH_TOKEN@api.github.com,uploads.github.com')).toEqual({
      name: 'GH_TOKEN',
      hosts: ['api.github.com', 'uploads.github.com'],
      body: false,
    });
    expect(parseSecretFlag('K@api.example.com:body').body).toBe(true);
  });

  it('refuses a value on the command line and says why, without echoing it', () => {
    let error: unknown;
    try {
      parseSecretFlag('GH_TOKEN=ghp_realvalue123@api.github.com');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain('values do not go on command lines');
    expect((error as Error).message).not.toContain('ghp_realvalue123');
  });

  it.each([
    ['no host', 'GH_TOKEN'],
    ['bad name', '1X@api.github.com'],
    ['wildcard', 'K@*.github.com'],
    ['ip', 'K@127.0.0.1'],
    ['port', 'K@api.github.com:443'],
    ['bad host', 'K@api github.com'],
    ['nul', 'K@api.github.com\0.evil'],
    ['empty host', 'K@'],
  ])('refuses %s', (_label, text) => {
    expect(() => parseSecretFlag(text)).toThrow(UsageError);
  });
});

describe('bindSecret and makeStandIn', () => {
  it('takes the value from the environment and makes a stand-in of the same form', () => {
    const value = 'ghp_AbCdEf0123456789abcdefABCDEF012345';
    const bound = bindSecret(parseSecretFlag('T@api.github.com'), { T: value });
    expect(bound.value).toBe(value);
    expect(bound.standIn).not.toBe(value);
    expect(bound.standIn).toMatch(/^ghp_[A-Za-z0-9]{34}$/);
    expect(bound.standIn.length).toBe(value.length);
    for (let i = 0; i < value.length; i++) {
      const kind = (c: string) => (/[a-z]/.test(c) ? 'l' : /[A-Z]/.test(c) ? 'u' : /\d/.test(c) ? 'd' : c);
      expect(kind(bound.standIn[i]!)).toBe(kind(value[i]!));
    }
  });

  it('is fresh each time and keeps separators', () => {
    const value = 'xoxb-1234567890-abcdefghij-XYZ';
    const a = makeStandIn(value);
    const b = makeStandIn(value);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^xoxb-\d{10}-[a-z]{10}-[A-Z]{3}$/);
  });

  it('refuses an unset, short or non-printable value', () => {
    const binding = parseSecretFlag('T@api.github.com');
    expect(() => bindSecret(binding, {})).toThrow(/not set/);
    expect(() => bindSecret(binding, { T: 'short' })).toThrow(/8 to 4096/);
    expect(() => bindSecret(binding, { T: 'has a space in it' })).toThrow(/printable ASCII/);
  });
});
