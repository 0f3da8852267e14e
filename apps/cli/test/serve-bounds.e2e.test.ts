import { mkdtempSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  abandonStateless,
  authed,
  INIT,
  idle,
  procStats,
  raw,
  type Served,
  settled,
  startServe,
  TOKEN,
  trickle,
} from './serve-helpers.js';

// What `serve` holds for a client, attacked through the built binary: streams of stateless
// requests the client abandoned, connections that trickle a body (with or without the token),
// connections that send nothing. Each must be released, and a real client must still get in.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const NOTES = fileURLToPath(new URL('./fixtures/notes-server.mjs', import.meta.url));
const MiB = 2 ** 20;
/** A young generation of 1 MiB for serve: its default swings of tens of MiB would hide a leak. */
const STEADY_HEAP = { NODE_OPTIONS: '--max-semi-space-size=1' };

async function sdkClient(served: Served): Promise<Client> {
  const client = new Client({ name: 'bounds-test', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(served.url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  await client.connect(transport);
  return client;
}

/** The control that serve still serves: a real SDK client opens a session and calls a tool. */
async function stillServes(served: Served): Promise<void> {
  const client = await sdkClient(served);
  try {
    const result = (await client.callTool({ name: 'recall', arguments: {} })) as {
      content: Array<{ text: string }>;
    };
    expect(result.content[0]?.text).toBe('[]');
  } finally {
    await client.close();
  }
}

describe('serve: what a client abandons is released', () => {
  it('finding 4: stateless (2026-07-28) SSE requests abandoned mid-call do not stay, in serve or in the bridge', async () => {
    const trace = join(mkdtempSync(join(tmpdir(), 'mcp-bounds-')), 'trace.jsonl');
    const served = await startServe(
      ['--mount', `${REPO}:ro`, '--trace', trace],
      ['node', NOTES],
      STEADY_HEAP,
    );
    try {
      const pid = served.child.pid as number;
      // The calls outlast the test: the server never answers them, only the client's leaving ends them.
      const args = { ms: 600_000, tag: 'abandoned' };
      const round = 2000;
      const idleFds = procStats(pid).fds;
      expect(await abandonStateless(served.port, round, 'slow', args)).toBe(round);
      // A dropped connection closes in serve a moment after it does here: read once they are down.
      const warm = await settled(pid, idleFds + 4);
      const later: Array<{ rss: number; fds: number }> = [];
      for (let i = 0; i < 3; i++) {
        expect(await abandonStateless(served.port, round, 'slow', args)).toBe(round);
        later.push(await settled(pid, warm.fds + 4));
      }
      // About 6 KiB a request stayed before: 36 MiB for these 6000. The smaller of the last two
      // samples takes out most of the heap's own swings; a leak only grows.
      const grown = Math.min(...later.slice(1).map((s) => s.rss)) - warm.rss;
      expect(grown).toBeLessThan(20 * MiB);
      expect(Math.max(...later.map((s) => s.fds)) - warm.fds).toBeLessThan(8);
      await stillServes(served);
    } finally {
      await served.stop();
    }
    const records = readFileSync(trace, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; dir?: string; message?: { method?: string } });
    // The control: every abandoned call reached the server, and so did its cancellation.
    const sent = (method: string) =>
      records.filter((r) => r.dir === 'client->server' && r.message?.method === method).length;
    expect(sent('tools/call')).toBeGreaterThanOrEqual(8000);
    expect(sent('notifications/cancelled')).toBeGreaterThanOrEqual(8000);
    // The bridge settled each one on its cancellation: none was still waited for at the end.
    expect(records.filter((r) => r.type === 'synthesized-error')).toEqual([]);
  }, 90_000);
});

describe('serve: a request its client cancels is let go', () => {
  it("in a session, the cancelled call's stream ends at once instead of waiting for an answer that never comes", async () => {
    const served = await startServe(['--mount', `${REPO}:ro`], ['node', NOTES]);
    try {
      const init = await raw(served.port, { headers: authed(served.port), body: JSON.stringify(INIT) });
      const session = String(init.headers['mcp-session-id']);
      const headers = authed(served.port, { 'mcp-session-id': session });
      const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
      expect((await raw(served.port, { headers, body: JSON.stringify(initialized) })).status).toBe(202);
      const call = JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'slow', arguments: { ms: 600_000 } },
      });
      const socket = connect(served.port, '127.0.0.1');
      socket.write(
        `POST /mcp HTTP/1.1\r\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}content-length: ${Buffer.byteLength(call)}\r\n\r\n${call}`,
      );
      let text = '';
      const started = new Promise<void>((resolve) =>
        socket.on('data', (c: Buffer) => {
          text += c.toString();
          if (text.includes('\r\n\r\n')) resolve();
        }),
      );
      const ended = new Promise<boolean>((resolve) => {
        socket.on('end', () => resolve(true));
        setTimeout(() => resolve(false), 15_000);
      });
      await started;
      expect(text).toMatch(/^HTTP\/1\.1 200/); // the control: the call is in flight on its stream
      const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } };
      expect((await raw(served.port, { headers, body: JSON.stringify(cancel) })).status).toBe(202);
      expect(await ended).toBe(true);
      socket.destroy();
      await raw(served.port, { method: 'DELETE', headers });
    } finally {
      await served.stop();
    }
  }, 60_000);
});

describe('serve: connections are bounded, before and after the token', () => {
  let served: Served;
  beforeAll(async () => {
    served = await startServe(['--mount', `${REPO}:ro`], ['node', NOTES]);
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
  });

  it('finding 5: clients without the token that trickle a body after their 401 are cut off; a real client still gets in', async () => {
    const pid = served.child.pid as number;
    const before = procStats(pid).fds;
    const trickling = Array.from({ length: 40 }, () =>
      trickle(served.port, { 'content-type': 'application/json' }, 20_000),
    );
    const ends = await Promise.all(trickling);
    // Each got its 401 and then lost its connection, while it was still sending.
    expect(ends).toEqual(Array.from({ length: 40 }, () => ({ status: 401 })));
    expect(procStats(pid).fds - before).toBeLessThan(8);
    await stillServes(served);
  }, 60_000);

  it('finding 5: a client with the token that never finishes its body is cut off (408)', async () => {
    const end = await trickle(served.port, authed(served.port, { 'transfer-encoding': 'chunked' }), 45_000);
    expect(end).toEqual({ status: 408 });
    await stillServes(served);
  }, 60_000);

  it('finding 5: the connection cap holds: silent connections past it are dropped at once, the rest at the header deadline', async () => {
    const pid = served.child.pid as number;
    const before = procStats(pid).fds;
    const silent = Array.from({ length: 400 }, () => idle(served.port));
    let closed = 0;
    for (const s of silent) void s.closed.then(() => closed++);
    // Past the cap (256), the listener drops a connection as it comes in.
    for (let i = 0; i < 100 && closed < 400 - 256; i++) await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBeGreaterThanOrEqual(400 - 256);
    expect(procStats(pid).fds - before).toBeLessThanOrEqual(256 + 8);
    // The ones within the cap sent no request head: they are cut off at its deadline.
    await Promise.all(silent.map((s) => s.closed));
    expect(procStats(pid).fds - before).toBeLessThan(8);
    await stillServes(served);
  }, 60_000);

  it('--max-connections that is not a whole number from 1 is a usage error, not a server that admits none', async () => {
    for (const value of ['0', '-1', '1e3', 'many']) {
      await expect(
        startServe(['--backend', 'none', '--max-connections', value], ['node', NOTES]),
      ).rejects.toThrow(/--max-connections .*give a whole number from 1 to 10000/);
    }
  });
});
