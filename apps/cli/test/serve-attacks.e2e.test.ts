import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authed, INIT, raw, type Served, startServe, TOKEN } from './serve-helpers.js';

// The HTTP surface of `mcp-sandbox serve`, attacked through the built binary: each test sends what
// a local process or a web page could send, and each has a control (the same request, made
// acceptable, succeeds), so a refusal is the guard's doing and not a broken server.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const TINY = fileURLToPath(new URL('./fixtures/tiny-server.mjs', import.meta.url));
const body = JSON.stringify(INIT);

function sseMessages(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

describe('serve: the HTTP surface refuses what it must', () => {
  let served: Served;
  beforeAll(async () => {
    served = await startServe(
      ['--mount', `${REPO}:ro`, '--max-sessions', '2', '--max-message-size', '64KiB'],
      ['node', TINY],
    );
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
  });

  it('control: the right token, Host and no Origin open a session', async () => {
    const res = await raw(served.port, { headers: authed(served.port), body });
    expect(res.status).toBe(200);
    expect(res.headers['mcp-session-id']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sseMessages(res.body)[0]).toMatchObject({
      id: 1,
      result: { serverInfo: { name: 'tiny-server' } },
    });
    await raw(served.port, {
      method: 'DELETE',
      headers: authed(served.port, { 'mcp-session-id': String(res.headers['mcp-session-id']) }),
    });
  }, 30_000);

  it('no token: 401 with WWW-Authenticate, no session', async () => {
    const { authorization: _, ...headers } = authed(served.port);
    const res = await raw(served.port, { headers, body });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(res.headers['mcp-session-id']).toBeUndefined();
  });

  it('a wrong token, a prefix of the token and the token plus one character: 401', async () => {
    for (const wrong of ['nope', TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase()]) {
      const res = await raw(served.port, {
        headers: authed(served.port, { authorization: `Bearer ${wrong}` }),
        body,
      });
      expect(res.status, wrong).toBe(401);
    }
    const basic = await raw(served.port, {
      headers: authed(served.port, { authorization: `Basic ${TOKEN}` }),
      body,
    });
    expect(basic.status).toBe(401);
  });

  it('a foreign Origin: 403 (a web page cannot drive the server); its own Origin is allowed', async () => {
    for (const origin of [
      'https://evil.example',
      'http://127.0.0.1.evil.example',
      'null',
      `http://127.0.0.1:${served.port + 1}`,
    ]) {
      const res = await raw(served.port, { headers: authed(served.port, { origin }), body });
      expect(res.status, origin).toBe(403);
      expect(res.headers['mcp-session-id']).toBeUndefined();
    }
    const own = await raw(served.port, {
      headers: authed(served.port, { origin: `http://localhost:${served.port}` }),
      body,
    });
    expect(own.status).toBe(200);
    await raw(served.port, {
      method: 'DELETE',
      headers: authed(served.port, { 'mcp-session-id': String(own.headers['mcp-session-id']) }),
    });
  }, 30_000);

  it('a Host that is not this loopback listener: 403 (DNS rebinding), even with the token', async () => {
    for (const host of [
      'evil.example',
      `evil.example:${served.port}`,
      `127.0.0.1:${served.port + 1}`,
      '127.0.0.1',
    ]) {
      const res = await raw(served.port, { headers: authed(served.port, { host }), body });
      expect(res.status, host).toBe(403);
    }
  });

  it('an oversize body: 413 before it is parsed, declared or streamed', async () => {
    const big = JSON.stringify({ ...INIT, params: { ...INIT.params, pad: 'x'.repeat(70 * 1024) } });
    const declared = await raw(served.port, { headers: authed(served.port), body: big });
    expect(declared.status).toBe(413);
    const chunked = await raw(served.port, {
      headers: authed(served.port, { 'transfer-encoding': 'chunked' }),
      body: Buffer.from(big),
    });
    expect(chunked.status).toBe(413);
  });

  it('too many sessions: 503 with Retry-After; a closed one frees its place', async () => {
    const a = await raw(served.port, { headers: authed(served.port), body });
    const b = await raw(served.port, { headers: authed(served.port), body });
    expect([a.status, b.status]).toEqual([200, 200]);
    const c = await raw(served.port, { headers: authed(served.port), body });
    expect(c.status).toBe(503);
    expect(Number(c.headers['retry-after'])).toBeGreaterThan(0);
    for (const r of [a, b]) {
      const del = await raw(served.port, {
        method: 'DELETE',
        headers: authed(served.port, { 'mcp-session-id': String(r.headers['mcp-session-id']) }),
      });
      expect(del.status).toBe(204);
    }
    // The sandboxes close asynchronously; then there is room again.
    let again = 503;
    for (let i = 0; i < 50 && again === 503; i++) {
      again = (await raw(served.port, { headers: authed(served.port), body })).status;
      if (again === 503) await new Promise((r) => setTimeout(r, 200));
    }
    expect(again).toBe(200);
  }, 60_000);

  it('a second initialize opens its own session and does not disturb the first; ids are random and unusable without the token', async () => {
    const first = await raw(served.port, { headers: authed(served.port), body });
    const second = await raw(served.port, { headers: authed(served.port), body });
    const ids = [first, second].map((r) => String(r.headers['mcp-session-id']));
    expect(ids[0]).not.toBe(ids[1]);
    // The first session still answers, on its own server.
    const call = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const listed = await raw(served.port, {
      headers: authed(served.port, { 'mcp-session-id': ids[0] as string }),
      body: call,
    });
    expect(listed.status).toBe(200);
    expect(sseMessages(listed.body)[0]).toMatchObject({ id: 2, result: { tools: expect.any(Array) } });
    // Another client that learned the id still needs the token.
    const { authorization: _, ...noToken } = authed(served.port, { 'mcp-session-id': ids[0] as string });
    expect((await raw(served.port, { headers: noToken, body: call })).status).toBe(401);
    // A made-up id is not a session.
    const guessed = await raw(served.port, {
      headers: authed(served.port, { 'mcp-session-id': 'AAAA' }),
      body: call,
    });
    expect(guessed.status).toBe(404);
    for (const id of ids) {
      await raw(served.port, { method: 'DELETE', headers: authed(served.port, { 'mcp-session-id': id }) });
    }
  }, 60_000);

  it('stateless (2026-07-28): GET and DELETE without a session are 405; a header that disagrees is 400', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await raw(served.port, { method, headers: authed(served.port) });
      expect(res.status, method).toBe(405);
    }
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const call = JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: meta } });
    const missing = await raw(served.port, { headers: authed(served.port), body: call });
    expect(missing.status).toBe(400);
    const wrongMethod = await raw(served.port, {
      headers: authed(served.port, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' }),
      body: call,
    });
    expect(wrongMethod.status).toBe(400);
    expect(JSON.parse(wrongMethod.body).error.code).toBe(-32020);
  });
});

describe('serve: the generated token', () => {
  it('is printed once on stderr, and is what the endpoint wants', async () => {
    const served = await startServe(['--backend', 'none'], ['node', TINY], {}, null);
    try {
      const printed = served.stderr().match(/bearer token \(shown once\): (\S+)/g) ?? [];
      expect(printed).toHaveLength(1);
      const token = (printed[0] as string).split(': ')[1] as string;
      expect(token.length).toBeGreaterThanOrEqual(43);
      const res = await raw(served.port, {
        headers: authed(served.port, { authorization: `Bearer ${token}` }),
        body,
      });
      expect(res.status).toBe(200);
      const wrong = await raw(served.port, { headers: authed(served.port), body });
      expect(wrong.status).toBe(401);
    } finally {
      await served.stop();
    }
    expect(served.stderr().split('shown once').length).toBe(2);
  }, 60_000);

  it('a token file with a short token is a usage error (exit 2), not a weak server', async () => {
    const { writeToken } = await import('./serve-helpers.js');
    await expect(startServe(['--backend', 'none'], ['node', TINY], {}, writeToken('short'))).rejects.toThrow(
      /at least 16 printable characters/,
    );
  });
});

describe('serve: resumable streams cannot be taken over or flooded', () => {
  const NOTES = fileURLToPath(new URL('./fixtures/notes-server.mjs', import.meta.url));
  let served: Served;
  beforeAll(async () => {
    served = await startServe(['--mount', `${REPO}:ro`], ['node', NOTES]);
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
  });

  const open = async () => {
    const res = await raw(served.port, { headers: authed(served.port), body });
    const ids = [...res.body.matchAll(/^id: (\S+)$/gm)].map((m) => m[1] as string);
    return { session: String(res.headers['mcp-session-id']), ids };
  };
  const resume = (session: string | undefined, eventId: string) =>
    raw(served.port, {
      method: 'GET',
      headers: {
        ...authed(served.port, session === undefined ? {} : { 'mcp-session-id': session }),
        accept: 'text/event-stream',
        'last-event-id': eventId,
      },
    });

  it("another session's id or event id does not resume its stream", async () => {
    const a = await open();
    const b = await open();
    const [primed, answered] = a.ids;
    expect(primed).toMatch(/^[A-Za-z0-9_-]{16}\.0$/);
    expect(answered).toBe(`${(primed as string).split('.')[0]}.1`);
    // Control: A itself resumes its initialize stream and gets its answer again.
    const own = await resume(a.session, primed as string);
    expect(own.status).toBe(200);
    expect(sseMessages(own.body)[0]).toMatchObject({
      id: 1,
      result: { serverInfo: { name: 'notes-server' } },
    });
    // B's session with A's event id, no session, a made-up session, a forged id in B: none resume.
    expect((await resume(b.session, primed as string)).status).toBe(404);
    expect((await resume(undefined, primed as string)).status).toBe(405);
    expect((await resume('AAAA', primed as string)).status).toBe(404);
    const forged = `${(b.ids[0] as string).split('.')[0]}.0`.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
    expect((await resume(b.session, forged)).status).toBe(404);
    expect((await resume(b.session, 'x'.repeat(5000))).status).toBe(404);
    for (const s of [a.session, b.session]) {
      await raw(served.port, { method: 'DELETE', headers: authed(served.port, { 'mcp-session-id': s }) });
    }
  }, 60_000);

  it("two stateless (2026-07-28) clients using the same progress token never get each other's progress", async () => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
      progressToken: 'same',
    };
    const callWith = (tag: string, ms: number) =>
      raw(served.port, {
        headers: authed(served.port, {
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'slow',
        }),
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'slow', arguments: { ms, tag }, _meta: meta },
        }),
      });
    const [a, b] = await Promise.all([callWith('A', 600), callWith('B', 300)]);
    for (const [res, tag] of [
      [a, 'A'],
      [b, 'B'],
    ] as const) {
      const messages = sseMessages(res.body);
      const progress = messages.filter((m) => m.method === 'notifications/progress');
      expect(progress, tag).toEqual([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'same', progress: 1 } },
      ]);
      expect(messages.at(-1), tag).toMatchObject({
        id: 1,
        result: { content: [{ text: `slow done: ${tag}` }] },
      });
    }
  }, 60_000);

  it('a flood to a client that never reads stays within the buffer bound; resuming past it is a clear error', async () => {
    const a = await open();
    const headers = { ...authed(served.port, { 'mcp-session-id': a.session }) };
    const initialized = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await raw(served.port, { headers, body: initialized });
    // A GET stream that reads its first event (to learn an id), then never reads again.
    const socket = connect(served.port, '127.0.0.1');
    socket.write(
      `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        `Accept: text/event-stream\r\nMcp-Session-Id: ${a.session}\r\n\r\n`,
    );
    const standing = await new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (c: Buffer) => {
        text += c.toString();
        const match = /^id: (\S+)$/m.exec(text);
        if (match) {
          socket.pause();
          resolve(match[1] as string);
        }
      });
    });
    // Log notifications of 50 kB, answered as JSON so that nothing else reads them: 100 MB a round.
    const flood = async (round: number) => {
      const res = await raw(served.port, {
        headers: { ...headers, accept: 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: round,
          method: 'tools/call',
          params: { name: 'flood', arguments: { count: 2000, size: 50_000 } },
        }),
      });
      // The control: the flood really ran.
      expect(JSON.parse(res.body)).toMatchObject({ result: { content: [{ text: 'flooded 2000' }] } });
      return peakRss(served.child.pid as number);
    };
    // The first round sizes the heap for the traffic; had serve kept what the reader did not read,
    // the second would add its 100 MB again.
    const first = await flood(2);
    const second = await flood(3);
    expect(second - first).toBeLessThan(40 * 2 ** 20);
    const late = await resume(a.session, standing);
    expect(late.status).toBe(409);
    expect(JSON.parse(late.body).error.message).toMatch(/no longer kept/);
    expect(served.stderr()).toMatch(/not reading its stream: \d+ message\(s\) dropped unread/);
    socket.destroy();
  }, 120_000);
});

/** The peak resident set of a process, in bytes (VmHWM). */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
}
