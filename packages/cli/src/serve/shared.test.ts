import { describe, expect, it } from 'vitest';
import { SharedServer } from './shared.js';
import type { Message, Upstream } from './upstream.js';

// The multiplexer alone, with an in-memory stand-in for the sandboxed server (the e2e tests in
// apps/cli/test/serve-sessions.e2e.test.ts drive the real one through the built binary).

function fixture() {
  const toServer: Message[] = [];
  let fromServer: (message: Message) => void = () => {};
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let ended = false;
  const upstream = {
    send: (m: Message) => toServer.push(m),
    close: () => {},
    stop: () => {},
    done: done.then(() => {
      ended = true;
    }),
    get ended() {
      return ended;
    },
  } as unknown as Upstream;
  const shared = new SharedServer((onMessage) => {
    fromServer = onMessage;
    return upstream;
  });
  const session = (sampling = true) => {
    const got: Message[] = [];
    const port = shared.link((m) => got.push(m));
    port.send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { capabilities: sampling ? { sampling: {} } : {} },
    });
    return { port, got };
  };
  return { shared, toServer, server: (m: Message) => fromServer(m), session, finish };
}

describe('SharedServer', () => {
  it('forwards the first initialize only and answers later sessions from its result', () => {
    const f = fixture();
    const a = f.session();
    const b = f.session();
    expect(f.toServer).toHaveLength(1);
    const wire = f.toServer[0] as Message;
    f.server({ jsonrpc: '2.0', id: wire.id, result: { serverInfo: { name: 's' } } });
    const c = f.session();
    for (const s of [a, b, c])
      expect(s.got).toEqual([{ jsonrpc: '2.0', id: 0, result: { serverInfo: { name: 's' } } }]);
    for (const s of [a, b]) s.port.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(f.toServer.filter((m) => m.method === 'notifications/initialized')).toHaveLength(1);
  });

  it('rewrites ids and progress tokens per session, and maps a cancellation to the rewritten id', () => {
    const f = fixture();
    const a = f.session();
    const b = f.session();
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: { progressToken: 1 } } };
    a.port.send(call);
    b.port.send(call);
    const [wa, wb] = f.toServer.slice(1) as Array<Message & { params: { _meta: { progressToken: string } } }>;
    expect(wa?.id).not.toBe(wb?.id);
    expect(wa?.params._meta.progressToken).not.toBe(wb?.params._meta.progressToken);
    f.server({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: wb?.params._meta.progressToken, progress: 1 },
    });
    expect(b.got.at(-1)).toMatchObject({ params: { progressToken: 1, progress: 1 } });
    expect(a.got.some((m) => m.method === 'notifications/progress')).toBe(false);
    b.port.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    expect(f.toServer.at(-1)).toMatchObject({ params: { requestId: wb?.id } });
    f.server({ jsonrpc: '2.0', id: wa?.id, result: { ok: 'a' } });
    expect(a.got.at(-1)).toEqual({ jsonrpc: '2.0', id: 1, result: { ok: 'a' } });
  });

  it('sends a server request to the busy session, accepts its answer only from that session', () => {
    const f = fixture();
    const idle = f.session();
    const busy = f.session();
    busy.port.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: {} });
    f.server({ jsonrpc: '2.0', id: 's1', method: 'sampling/createMessage', params: {} });
    expect(busy.got.at(-1)).toMatchObject({ id: 's1', method: 'sampling/createMessage' });
    const sent = f.toServer.length;
    idle.port.send({ jsonrpc: '2.0', id: 's1', result: { forged: true } });
    expect(f.toServer).toHaveLength(sent);
    busy.port.send({ jsonrpc: '2.0', id: 's1', result: { content: {} } });
    expect(f.toServer.at(-1)).toEqual({ jsonrpc: '2.0', id: 's1', result: { content: {} } });
  });

  it('with no session able to answer, the server gets an error; a session that leaves has its calls cancelled', () => {
    const f = fixture();
    const a = f.session(false);
    f.server({ jsonrpc: '2.0', id: 7, method: 'sampling/createMessage', params: {} });
    expect(f.toServer.at(-1)).toMatchObject({ id: 7, error: { code: -32603 } });
    a.port.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: {} });
    const wire = (f.toServer.at(-1) as Message).id;
    a.port.close();
    expect(f.toServer.at(-1)).toMatchObject({
      method: 'notifications/cancelled',
      params: { requestId: wire },
    });
  });

  it('never guesses: two busy sessions and a request that names neither get the server an error', () => {
    const f = fixture();
    const a = f.session();
    const b = f.session();
    a.port.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} });
    b.port.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} });
    const wireA = (f.toServer.at(-2) as Message).id;
    f.server({ jsonrpc: '2.0', id: 's1', method: 'sampling/createMessage', params: {} });
    expect(f.toServer.at(-1)).toMatchObject({ id: 's1', error: { code: -32603 } });
    expect(String((f.toServer.at(-1) as { error: { message: string } }).error.message)).toMatch(
      /cannot tell which session/,
    );
    for (const s of [a, b]) expect(s.got.some((m) => m.method === 'sampling/createMessage')).toBe(false);
    // A related-request link names A: then A is asked, whoever else is busy.
    const related = { 'io.modelcontextprotocol/related-request-id': wireA };
    f.server({ jsonrpc: '2.0', id: 's2', method: 'sampling/createMessage', params: { _meta: related } });
    expect(a.got.at(-1)).toMatchObject({ id: 's2' });
    expect(b.got.some((m) => m.id === 's2')).toBe(false);
    // A link to a request no longer in flight is not a reason to ask the newest session.
    const stale = { 'io.modelcontextprotocol/related-request-id': 'mcp-sandbox-999' };
    f.server({ jsonrpc: '2.0', id: 's3', method: 'roots/list', params: { _meta: stale } });
    expect(f.toServer.at(-1)).toMatchObject({ id: 's3', error: { code: -32603 } });
  });

  it('the one busy session is asked only if it declared the capability; an idle one never is', () => {
    const f = fixture();
    const idle = f.session();
    const busy = f.session(false);
    busy.port.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} });
    f.server({ jsonrpc: '2.0', id: 9, method: 'sampling/createMessage', params: {} });
    expect(f.toServer.at(-1)).toMatchObject({ id: 9, error: { code: -32603 } });
    expect(idle.got.some((m) => m.id === 9)).toBe(false);
  });

  it('every combination of sessions, calls, capabilities and links: one provable owner is asked, or none', () => {
    type Link = { kind: 'none' } | { kind: 'related' | 'token'; of: number } | { kind: 'stale' };
    for (let n = 1; n <= 3; n++) {
      for (let mask = 0; mask < 4 ** n; mask++) {
        const busy = Array.from({ length: n }, (_, i) => ((mask >> (2 * i)) & 1) === 1);
        const able = Array.from({ length: n }, (_, i) => ((mask >> (2 * i + 1)) & 1) === 1);
        const links: Link[] = [{ kind: 'none' }, { kind: 'stale' }];
        for (let i = 0; i < n; i++) {
          if (busy[i]) links.push({ kind: 'related', of: i }, { kind: 'token', of: i });
        }
        for (const link of links) {
          const f = fixture();
          const sessions = able.map((a) => f.session(a));
          const wire: Message[] = [];
          sessions.forEach((s, i) => {
            if (!busy[i]) return;
            const call = {
              jsonrpc: '2.0',
              id: 1,
              method: 'tools/call',
              params: { _meta: { progressToken: 't' } },
            };
            s.port.send(call);
            wire[i] = f.toServer.at(-1) as Message;
          });
          const meta: Record<string, unknown> = {};
          if (link.kind === 'related') meta['io.modelcontextprotocol/related-request-id'] = wire[link.of]?.id;
          if (link.kind === 'token') {
            meta.progressToken = (
              (wire[link.of] as Message).params as { _meta: { progressToken: string } }
            )._meta.progressToken;
          }
          if (link.kind === 'stale') meta['io.modelcontextprotocol/related-request-id'] = 'mcp-sandbox-999';
          f.server({ jsonrpc: '2.0', id: 'ask', method: 'sampling/createMessage', params: { _meta: meta } });
          const busyOnes = busy.flatMap((b, i) => (b ? [i] : []));
          const owner =
            link.kind === 'related' || link.kind === 'token'
              ? link.of
              : link.kind === 'none' && busyOnes.length === 1
                ? (busyOnes[0] as number)
                : undefined;
          const expected = owner !== undefined && able[owner] ? owner : undefined;
          const asked = sessions.flatMap((s, i) => (s.got.some((m) => m.id === 'ask') ? [i] : []));
          const label = JSON.stringify({ busy, able, link });
          expect(asked, label).toEqual(expected === undefined ? [] : [expected]);
          if (expected === undefined) {
            expect(f.toServer.at(-1), label).toMatchObject({ id: 'ask', error: { code: -32603 } });
          }
        }
      }
    }
  });

  it('a call its client cancelled is no longer in flight: it makes no session the owner of a server request', () => {
    const f = fixture();
    const a = f.session();
    a.port.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: {} });
    const wire = (f.toServer.at(-1) as Message).id;
    a.port.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 4 } });
    expect(f.toServer.at(-1)).toMatchObject({ params: { requestId: wire } });
    f.server({ jsonrpc: '2.0', id: 'late', method: 'sampling/createMessage', params: {} });
    expect(a.got.some((m) => m.id === 'late')).toBe(false);
    expect(f.toServer.at(-1)).toMatchObject({ id: 'late', error: { code: -32603 } });
    // A late answer to the cancelled call is not delivered either.
    f.server({ jsonrpc: '2.0', id: wire, result: {} });
    expect(a.got.some((m) => m.id === 4)).toBe(false);
  });
});
