import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  abandonStateless,
  idle,
  procStats,
  type Served,
  settled,
  startServe,
  TOKEN,
  trickle,
} from './serve-helpers.js';

// The soak: one `serve` process on loopback, and rounds of clients that abandon stateless calls
// mid-stream, trickle bodies without the token, open connections and drop them, and open a
// session, use it and leave. After a warm phase, more rounds must leave the process's resident
// memory and open descriptors where they were: what is not released shows as growth. A bounded
// count of clients and rounds; it stops by itself.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const NOTES = fileURLToPath(new URL('./fixtures/notes-server.mjs', import.meta.url));
const MiB = 2 ** 20;
const ABANDONED_PER_ROUND = 1000;
/**
 * A young generation of 1 MiB for the serve process: V8's default grows it to tens of MiB under
 * churn, and its swings would hide a leak of this size. What survives is still all counted.
 */
const STEADY_HEAP = { NODE_OPTIONS: '--max-semi-space-size=1' };

async function session(served: Served): Promise<void> {
  const client = new Client({ name: 'soak', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(served.url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  await client.connect(transport);
  try {
    const result = (await client.callTool({ name: 'remember', arguments: { note: 'soak' } })) as {
      content: Array<{ text: string }>;
    };
    expect(result.content[0]?.text).toBe('stored 1'); // a sandbox of its own: its first note
  } finally {
    // The session ends (DELETE), and its sandbox with it; a client that just goes away holds its
    // session (and sandbox) until --ttl: that bound is --max-sessions.
    await transport.terminateSession();
    await client.close();
  }
}

/** One round of every kind of client; resolves once the server has let every one of them go. */
async function round(served: Served): Promise<void> {
  const dropped = Array.from({ length: 50 }, () => idle(served.port));
  const trickling = Array.from({ length: 20 }, () =>
    trickle(served.port, { 'content-type': 'application/json' }, 20_000),
  );
  const abandoned = abandonStateless(served.port, ABANDONED_PER_ROUND, 'slow', { ms: 600_000 });
  await session(served);
  for (const d of dropped) d.socket.destroy();
  expect(await abandoned).toBe(ABANDONED_PER_ROUND);
  expect(await Promise.all(trickling)).toEqual(Array.from({ length: 20 }, () => ({ status: 401 })));
  await Promise.all(dropped.map((d) => d.closed));
}

describe('serve: soak', () => {
  let served: Served;
  beforeAll(async () => {
    served = await startServe(['--mount', `${REPO}:ro`], ['node', NOTES], STEADY_HEAP);
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
  });

  it('clients that abandon, trickle, drop and reconnect leave memory and descriptors flat', async () => {
    const pid = served.child.pid as number;
    // The heap settles into its size over the first rounds; then more rounds must not add to it.
    const idleFds = procStats(pid).fds;
    for (let i = 0; i < 4; i++) await round(served);
    const warm = await settled(pid, idleFds + 8);
    const later: Array<{ rss: number; fds: number }> = [];
    for (let i = 0; i < 4; i++) {
      await round(served);
      // A dropped connection closes in serve a moment after it does here; a sandbox after its
      // session: the count must come back down, and one that never does is the leak.
      later.push(await settled(pid, warm.fds + 8));
    }
    for (const s of later) expect(s.fds - warm.fds).toBeLessThanOrEqual(8);
    // 6 KiB a request kept would be 23 MiB over these 4000 abandoned calls alone.
    const grown = (later.at(-1)?.rss ?? 0) - warm.rss;
    expect(grown, `RSS ${warm.rss} then ${later.map((s) => s.rss).join(', ')}`).toBeLessThan(12 * MiB);
  }, 90_000);
});
