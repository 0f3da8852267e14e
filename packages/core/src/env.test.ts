import { describe, expect, it } from 'vitest';
import { resolveEnvAllowlist } from './env.js';
import { UsageError } from './errors.js';
import { createRedactor } from './secrets.js';

describe('resolveEnvAllowlist', () => {
  const host = {
    HOME: '/home/u',
    GITHUB_TOKEN: 'ghp_secretvalue',
    AWS_SECRET_ACCESS_KEY: 'aws-secret',
    PATH: '/bin',
  };

  it('forwards KEY from the host and sets KEY=value, nothing else', () => {
    const result = resolveEnvAllowlist(['GITHUB_TOKEN', 'URL=a=b', 'EMPTY='], host);
    expect(result.env).toEqual({ GITHUB_TOKEN: 'ghp_secretvalue', URL: 'a=b', EMPTY: '' });
    expect(result.withheld).toEqual(['AWS_SECRET_ACCESS_KEY', 'HOME', 'PATH']);
    expect(result.withheldSecretLike).toEqual(['AWS_SECRET_ACCESS_KEY']);
    expect(result.secrets).toEqual(['ghp_secretvalue']);
  });

  it('refuses a KEY the host does not have, saying how to fix it', () => {
    expect(() => resolveEnvAllowlist(['MISSING_ONE'], host)).toThrow(UsageError);
    expect(() => resolveEnvAllowlist(['MISSING_ONE'], host)).toThrow(
      /export it first, or pass --env MISSING_ONE=<value>/,
    );
  });

  it('refuses names that are not variable names', () => {
    expect(() => resolveEnvAllowlist(['=x'], host)).toThrow(UsageError);
    expect(() => resolveEnvAllowlist(['A B=1'], host)).toThrow(UsageError);
  });
});

describe('createRedactor', () => {
  it('redacts secrets as written and as escaped in JSON', () => {
    const redact = createRedactor(['s3cr"et', 'tok', 'longer-token']);
    expect(redact('a s3cr"et b')).toBe('a [REDACTED] b');
    expect(redact(JSON.stringify({ v: 's3cr"et' }))).toBe('{"v":"[REDACTED]"}');
    expect(redact('tok stays: too short to redact; longer-token goes')).toBe(
      'tok stays: too short to redact; [REDACTED] goes',
    );
  });
});
