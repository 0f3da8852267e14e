import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { JsonlTrace, silentLogger, startBridge } from '../src/index.js';
import { mirrorBackend } from './memory-backend.js';

describe('BridgeSession.crash', () => {
  it('records bridge-crash, answers requests in flight with -32000, closes the sandbox, exit 125', async () => {
    const written: string[] = [];
    const trace = new JsonlTrace(
      (text) => written.push(text),
      () => undefined,
    );
    const client = new PassThrough();
    const out: Buffer[] = [];
    const output = new Writable({
      write(chunk: Buffer, _enc, done) {
        out.push(Buffer.from(chunk));
        done();
      },
    });
    const backend = mirrorBackend();
    const session = startBridge({
      backend,
      command: ['mirror'],
      spec: { sessionId: 'crash', env: {}, ttlMs: 60_000 },
      input: client,
      output,
      errorOutput: new PassThrough(),
      logger: silentLogger,
      trace,
    });
    // The mirror echoes the request back as a request: it stays in flight.
    client.write('{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"x"}}\n');
    while (!Buffer.concat(out).includes('"id":42')) await new Promise((r) => setTimeout(r, 5));
    session.crash(new Error('boom \x1b]0;title\x07'));
    session.crash(new Error('a second fault changes nothing'));
    const result = await session.done;
    trace.flush();

    expect(result).toMatchObject({ exitCode: 125, reason: 'bridge-crash' });
    expect(backend.closed).toBe(1);
    const answers = Buffer.concat(out)
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; error?: { code: number } });
    expect(answers).toContainEqual(
      expect.objectContaining({ id: 42, error: expect.objectContaining({ code: -32000 }) }),
    );
    const records = written
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.filter((r) => r.type === 'bridge-crash')).toEqual([
      expect.objectContaining({ message: 'boom \x1b]0;title\x07' }),
    ]);
    expect(records.at(-1)).toMatchObject({ type: 'session-end', reason: 'bridge-crash', exitCode: 125 });
  });
});
