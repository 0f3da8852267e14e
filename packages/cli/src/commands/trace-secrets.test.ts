import { summarizeTrace } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import { formatSummary } from './trace-action.js';

const rec = (seq: number, type: string, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ v: 1, ts: '2026-01-01T00:00:00.000Z', t: seq, seq, type, ...fields });

describe('trace: --secret in the summary of a recorded trace', () => {
  it('names each secret, its hosts and requests, the misuse of its stand-in and what was cut off', () => {
    const text = `${[
      rec(0, 'session-start', { sessionId: 's1', backend: 'local' }),
      rec(1, 'process-start'),
      rec(2, 'sandbox.secret-substituted', {
        name: 'GH',
        host: 'api.github.com',
        method: 'GET',
        path: '/user',
      }),
      rec(3, 'sandbox.secret-misuse', { name: 'GH', host: 'api.github.com', where: 'header' }),
      rec(4, 'sandbox.secret-misuse', { name: 'GH', where: 'dns' }),
      rec(5, 'sandbox.secret-reply-cut', {
        name: 'GH',
        host: 'api.github.com',
        reason: 'the reply carried the real value',
      }),
      rec(6, 'sandbox.secret-tls-failed', { host: 'uploads.github.com', port: 443 }),
      rec(7, 'env-hint', { name: 'BRAVE_API_KEY' }),
    ].join('\n')}\n`;
    const out = formatSummary(summarizeTrace(text));
    expect(out).toContain(
      [
        'secrets (never the value):',
        '  GH: put on the wire in 1 request(s) to api.github.com (1)',
        '    GET api.github.com /user',
        '    misuse: the stand-in was sent where it is not replaced: header to api.github.com (1), dns (1)',
        '    1 reply(ies) cut off: they carried the real value',
        'bound host uploads.github.com: 1 connection(s) did not complete TLS with the session CA (use --env for such a client)',
      ].join('\n'),
    );
    expect(out).toContain(
      'env: the server asked for BRAVE_API_KEY, which was withheld (pass it with --secret BRAVE_API_KEY@api.search.brave.com on backend local, or --env BRAVE_API_KEY)',
    );
  });

  it('a trace without --secret says nothing of secrets', () => {
    const out = formatSummary(summarizeTrace(`${rec(0, 'session-start', { sessionId: 's' })}\n`));
    expect(out).not.toContain('secret');
  });
});
