import { describe, expect, it } from 'vitest';
import { SecretTally } from './secret-summary.js';
import { summarizeTrace } from './trace-summary.js';

const rec = (seq: number, type: string, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ v: 1, ts: '2026-01-01T00:00:00.000Z', t: seq, seq, type, ...fields });

describe('SecretTally', () => {
  it('summarises each secret from a recorded trace: substitutions per host and request, misuse, cut replies', () => {
    const text = `${[
      rec(0, 'session-start', { sessionId: 's1' }),
      rec(1, 'process-start'),
      rec(2, 'sandbox.secret-substituted', {
        name: 'GH',
        host: 'api.github.com',
        method: 'GET',
        path: '/user',
      }),
      rec(3, 'sandbox.secret-substituted', {
        name: 'GH',
        host: 'api.github.com',
        method: 'GET',
        path: '/user',
      }),
      rec(4, 'sandbox.secret-substituted', {
        name: 'GH',
        host: 'api.github.com',
        method: 'POST',
        path: '/repos/o/r/issues',
      }),
      rec(5, 'sandbox.secret-misuse', { name: 'GH', host: 'api.github.com', where: 'body' }),
      rec(6, 'sandbox.secret-misuse', { name: 'GH', where: 'dns' }),
      rec(7, 'sandbox.secret-misuse', { name: 'GH', where: 'plain-http' }),
      rec(8, 'sandbox.secret-reply-cut', {
        name: 'GH',
        host: 'api.github.com',
        reason: 'the reply carried the real value',
      }),
      rec(9, 'sandbox.secret-tls-failed', { host: 'api.github.com', port: 443 }),
      rec(10, 'sandbox.secret-request-refused', {
        host: 'api.github.com',
        reason: 'Host header is not the bound host',
      }),
      rec(11, 'sandbox.secret-reply-cut', { host: 'api.github.com', reason: 'compressed' }),
    ].join('\n')}\n`;
    const [session] = summarizeTrace(text).sessions;
    expect(session?.secrets).toEqual({
      GH: {
        substituted: { 'api.github.com': 3 },
        requests: ['GET api.github.com /user', 'POST api.github.com /repos/o/r/issues'],
        misuse: { 'body to api.github.com': 1, dns: 1, 'plain-http': 1 },
        repliesCut: 1,
      },
    });
    expect(session?.boundHosts).toEqual({ 'api.github.com': { tlsFailed: 1, refused: 1, repliesCut: 1 } });
  });

  it('attack: a trace file edited by hand keeps only valid names, hosts and methods, and bounded printable paths', () => {
    const tally = new SecretTally();
    tally.add({
      type: 'sandbox.secret-substituted',
      name: 'BAD\u001bNAME',
      host: 'a.example',
      method: 'GET',
      path: '/',
    });
    tally.add({
      type: 'sandbox.secret-substituted',
      name: 'T',
      host: 'evil\u0000.example',
      method: 'GET',
      path: '/',
    });
    tally.add({
      type: 'sandbox.secret-substituted',
      name: 'T',
      host: 'a.example',
      method: 'G\u001b[2JET',
      path: `/x\u001b]0;owned\u0007${'y'.repeat(500)}`,
      value: 'ghp_real',
    });
    tally.add({ type: 'sandbox.secret-misuse', name: '__proto__', where: '\u001b[31m' });
    for (let i = 0; i < 30; i++)
      tally.add({
        type: 'sandbox.secret-substituted',
        name: 'T',
        host: 'a.example',
        method: 'GET',
        path: `/${i}`,
      });
    const { secrets } = tally.result();
    expect(Object.keys(secrets)).toEqual(['T', '__proto__']);
    expect(Object.getPrototypeOf(secrets)).toBe(Object.prototype);
    const t = secrets.T;
    expect(t?.substituted).toEqual({ 'a.example': 31 });
    expect(t?.requests).toHaveLength(10);
    const first = t?.requests[0] ?? '';
    expect(first.startsWith('? a.example /x?]0;owned?yyy')).toBe(true);
    expect([...first].every((ch) => (ch >= '!' && ch <= '~') || ch === ' ' || ch === '…')).toBe(true);
    expect(first.length).toBeLessThan(140);
    expect(JSON.stringify(secrets)).not.toContain('ghp_real');
    expect(Object.getOwnPropertyDescriptor(secrets, '__proto__')?.value.misuse).toEqual({ elsewhere: 1 });
  });
});
