import { describe, expect, it } from 'vitest';
import { JsonlTrace } from './trace.js';

function memoryTrace(secrets: string[] = []) {
  const written: string[] = [];
  let closed = 0;
  const trace = new JsonlTrace(
    (text) => written.push(text),
    () => closed++,
    { secrets },
  );
  const records = () =>
    written
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { trace, written, records, closedCount: () => closed };
}

describe('JsonlTrace', () => {
  it('writes versioned, numbered records and embeds messages as sent', () => {
    const { trace, written, records } = memoryTrace();
    trace.event('session-start', { backend: 'none' });
    trace.message('client->server', '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}', 57, true);
    trace.message('server->client', 'hello, not json', 16, false);
    trace.flush();
    const [start, message, raw] = records();
    expect(start).toMatchObject({ v: 1, seq: 0, type: 'session-start', backend: 'none' });
    expect(message).toMatchObject({ v: 1, seq: 1, type: 'message', dir: 'client->server', bytes: 57 });
    expect(written.join('')).toContain('"message":{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}');
    expect(raw).toMatchObject({ seq: 2, raw: 'hello, not json' });
  });

  it('redacts secrets in messages and events, keeping records valid JSON', () => {
    const { trace, written, records } = memoryTrace(['hunter22', '12345678']);
    trace.event('stderr', { text: 'password is hunter22' });
    trace.message('server->client', '{"id":1,"result":{"text":"hunter22","n":12345678}}', 50, true);
    trace.flush();
    expect(written.join('')).not.toContain('hunter22');
    expect(written.join('')).not.toContain('12345678');
    const [event, message] = records();
    expect(event?.text).toBe('password is [REDACTED]');
    expect(message?.raw).toBe('{"id":1,"result":{"text":"[REDACTED]","n":[REDACTED]}}');
  });

  it('flushes on close and ignores records after it', () => {
    const { trace, records, closedCount } = memoryTrace();
    trace.event('a');
    trace.close();
    trace.close();
    trace.event('b');
    trace.flush();
    expect(records().map((r) => r.type)).toEqual(['a']);
    expect(closedCount()).toBe(1);
  });
});
