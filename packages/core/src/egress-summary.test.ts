import { describe, expect, it } from 'vitest';
import { EgressTally, INVALID_HOST_KEY } from './egress-summary.js';
import { summarizeTrace } from './trace-summary.js';

const proxy = (fields: Record<string, unknown>) => ({ type: 'sandbox.proxy', ...fields });

describe('EgressTally', () => {
  it('counts each record once: proxy decisions, DNS refusals, and egress-failed', () => {
    const tally = new EgressTally();
    tally.add(proxy({ decision: 'allow', host: 'a.example', port: 443, address: '192.0.2.1' }));
    tally.add({
      type: 'sandbox.egress-failed',
      host: 'a.example',
      port: 443,
      via: 'proxy',
      reason: 'ECONNREFUSED',
    });
    tally.add(proxy({ decision: 'deny', host: 'b.example', port: 80, reason: 'not granted' }));
    // The denial reporter's copy of the same refusal is not counted again.
    tally.add({ type: 'sandbox.egress-denied', host: 'b.example', port: 80, via: 'proxy' });
    tally.add({ type: 'sandbox.egress-denied', host: 'c.example', via: 'dns' });
    tally.add(proxy({ decision: 'deny', host: 'd.example', port: 443, reason: 'cannot resolve: ENOTFOUND' }));
    tally.add(
      proxy({ decision: 'bad-upstream', host: 'a.example', port: 443, reason: 'unparsable reply (HPE_X)' }),
    );
    tally.add(proxy({ decision: 'deny', method: 'CONNECT', reason: 'invalid host name' }));
    tally.add(proxy({ decision: 'fault', method: 'accept', reason: 'EMFILE' }));
    tally.add({ type: 'sandbox.limits' });
    expect(tally.result()).toEqual({
      'a.example': {
        allowed: 1,
        denied: 0,
        failed: 2,
        reasons: ['ECONNREFUSED', 'unparsable reply (HPE_X)'],
      },
      'b.example': { allowed: 0, denied: 1, failed: 0, reasons: ['not granted'] },
      'c.example': { allowed: 0, denied: 1, failed: 0, reasons: ['not granted (DNS lookup)'] },
      'd.example': { allowed: 0, denied: 0, failed: 1, reasons: ['cannot resolve: ENOTFOUND'] },
      [INVALID_HOST_KEY]: { allowed: 0, denied: 1, failed: 0, reasons: ['invalid host name'] },
    });
  });

  it('a host read back as __proto__ is an own key, and reasons are bounded', () => {
    const tally = new EgressTally();
    for (let i = 0; i < 10; i++)
      tally.add(proxy({ decision: 'deny', host: '__proto__', reason: `r${i}${'x'.repeat(300)}` }));
    const result = tally.result();
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(Object.hasOwn(result, '__proto__')).toBe(true);
    const stats = Object.getOwnPropertyDescriptor(result, '__proto__')?.value;
    expect(stats.denied).toBe(10);
    expect(stats.reasons).toHaveLength(4);
    expect(stats.reasons[0]).toHaveLength(200);
  });

  it('summarizeTrace keeps egress and env hints per session, and only valid names as hints', () => {
    const rec = (seq: number, type: string, fields: Record<string, unknown> = {}) =>
      JSON.stringify({ v: 1, ts: '2026-01-01T00:00:00.000Z', t: seq, seq, type, ...fields });
    const text = `${[
      rec(0, 'session-start', { sessionId: 's1' }),
      rec(1, 'sandbox.proxy', { decision: 'allow', host: 'registry.example', port: 443 }),
      rec(1, 'process-start'),
      rec(1, 'sandbox.proxy', { decision: 'allow', host: 'a.example', port: 443 }),
      rec(2, 'env-hint', { name: 'BRAVE_API_KEY' }),
      rec(3, 'env-hint', { name: 'BAD\u001bNAME' }),
      rec(4, 'session-start', { sessionId: 's2' }),
    ].join('\n')}\n`;
    const [first, second] = summarizeTrace(text).sessions;
    expect(first?.egress).toEqual({ 'a.example': { allowed: 1, denied: 0, failed: 0, reasons: [] } });
    expect(first?.setupEgress).toEqual({
      'registry.example': { allowed: 1, denied: 0, failed: 0, reasons: [] },
    });
    expect(first?.envHints).toEqual(['BRAVE_API_KEY']);
    expect(second?.egress).toEqual({});
    expect(second?.envHints).toEqual([]);
  });
});
