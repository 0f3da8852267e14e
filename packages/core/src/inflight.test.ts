import { describe, expect, it } from 'vitest';
import { InFlightRequests } from './inflight.js';

const cancelled = (requestId: unknown) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId },
});

describe('InFlightRequests', () => {
  it('a cancelled request is owed nothing: not waited for, not answered for, and a late answer still matches', async () => {
    const sent: string[] = [];
    const inflight = new InFlightRequests((line) => sent.push(line.toString()), undefined);
    inflight.add('s:a', '"a"');
    inflight.add('n:7', '7');
    inflight.cancel(cancelled('a'));
    inflight.cancel(cancelled('7')); // the string "7" is not request 7
    expect(inflight.size).toBe(1);
    expect(inflight.entries()).toEqual([['n:7', '7']]);
    expect(inflight.has('s:a')).toBe(true);
    inflight.cancel(cancelled(7));
    await inflight.drained(); // settles: nothing is left to wait for
    inflight.settle('s:a');
    expect(inflight.has('s:a')).toBe(false);
    expect(sent).toEqual([]);
  });

  it('remembers only the newest cancelled requests, and ignores what is not a cancellation', () => {
    const inflight = new InFlightRequests(() => {}, undefined);
    for (let i = 0; i < 1000; i++) {
      inflight.add(`n:${i}`, String(i));
      inflight.cancel(cancelled(i));
    }
    expect(inflight.size).toBe(0);
    expect(inflight.has('n:0')).toBe(false);
    expect(inflight.has('n:999')).toBe(true);
    inflight.add('n:1', '1');
    inflight.cancel({ jsonrpc: '2.0', method: 'notifications/progress', params: { requestId: 1 } });
    inflight.cancel(cancelled(2 ** 60)); // not an exact id: never matched loosely
    expect(inflight.size).toBe(1);
  });
});
