import { bindSecret, parseSecretFlag, UsageError } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import { planSecrets, substitutesSecrets, withFreshStandIns } from './secret-plan.js';

const REAL = 'xoxb-1234567890-abcdefghijKLMN';
const backend = (name: string) => ({ name, substitutes: substitutesSecrets(name) });
const local = backend('local');

describe('planSecrets', () => {
  it('binds each flag and refuses what cannot be honoured', () => {
    const [bound] = planSecrets(['SLACK@slack.com'], { SLACK: REAL }, local, ['slack.com'], []);
    expect(bound?.value).toBe(REAL);
    // Every OS engine's egress passes this host's proxy; e2b's and vm's do not.
    for (const id of ['srt', 'seatbelt']) {
      const [other] = planSecrets(['SLACK@slack.com'], { SLACK: REAL }, backend(id), ['slack.com'], []);
      expect(other?.standIn).not.toBe(REAL);
    }
    for (const id of ['e2b', 'vm', 'none']) {
      expect(() => planSecrets(['SLACK@slack.com'], { SLACK: REAL }, backend(id), ['slack.com'], [])).toThrow(
        new RegExp(`not supported on backend ${id}.*--env SLACK`),
      );
    }
    expect(() =>
      planSecrets(['SLACK@slack.com', 'SLACK@slack.com'], { SLACK: REAL }, local, ['slack.com'], []),
    ).toThrow(UsageError);
    expect(() => planSecrets(['SLACK@slack.com'], { SLACK: REAL }, local, ['*.slack.com'], [])).toThrow(
      /not granted/,
    );
  });
});

describe('withFreshStandIns (serve: one sandbox per session)', () => {
  it('gives every session its own stand-in, in its env and its bindings, and keeps the value', () => {
    const secret = bindSecret(parseSecretFlag('SLACK@slack.com'), { SLACK: REAL });
    const spec = {
      sessionId: 'a',
      env: { SLACK: secret.standIn, OTHER: 'x' },
      ttlMs: 1000,
      network: { allow: ['slack.com'], secrets: [secret] },
    };
    const one = withFreshStandIns(spec);
    const two = withFreshStandIns(spec);
    expect(one.env.SLACK).not.toBe(secret.standIn);
    expect(one.env.SLACK).not.toBe(two.env.SLACK);
    expect(one.network?.secrets?.[0]?.standIn).toBe(one.env.SLACK);
    expect(one.network?.secrets?.[0]?.value).toBe(REAL);
    expect(one.env.OTHER).toBe('x');
    expect(withFreshStandIns({ ...spec, network: { allow: [] } })).toEqual({
      ...spec,
      network: { allow: [] },
    });
  });
});
