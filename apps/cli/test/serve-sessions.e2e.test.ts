import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, startServe, TOKEN } from './serve-helpers.js';

// Sessions through the built binary with the real SDK clients (v1 and v2): a sandbox per session
// by default, `--shared` multiplexing one, and a client that loses its stream mid-call resuming it
// with Last-Event-ID. The server is a small stateful stdio fixture, run in the local sandbox.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const NOTES = fileURLToPath(new URL('./fixtures/notes-server.mjs', import.meta.url));
const auth = { headers: { Authorization: `Bearer ${TOKEN}` } };

async function v1(
  served: Served,
  answer?: string,
  fetchFn?: typeof fetch,
  prompts: string[] = [],
): Promise<Client> {
  const client = new Client(
    { name: 'v1-client', version: '1.0.0' },
    { capabilities: answer ? { sampling: {} } : {} },
  );
  if (answer) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      prompts.push(promptOf(request.params));
      return { role: 'assistant', model: 'test', content: { type: 'text', text: answer } };
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(served.url), {
    requestInit: auth,
    ...(fetchFn ? { fetch: fetchFn } : {}),
  });
  await client.connect(transport);
  return client;
}

async function v2(served: Served, answer?: string, prompts: string[] = []): Promise<ClientV2> {
  const client = new ClientV2(
    { name: 'v2-client', version: '1.0.0' },
    { capabilities: answer ? { sampling: {} } : {}, versionNegotiation: { mode: 'legacy' } },
  );
  if (answer) {
    client.setRequestHandler('sampling/createMessage', async (request) => {
      prompts.push(promptOf(request.params));
      return { role: 'assistant', model: 'test', content: { type: 'text', text: answer } };
    });
  }
  await client.connect(new TransportV2(new URL(served.url), { requestInit: auth }));
  return client;
}

/** The text of a sampling request's first message: what the server asked. */
function promptOf(params: unknown): string {
  const first = (params as { messages?: Array<{ content?: { text?: unknown } }> }).messages?.[0];
  return String(first?.content?.text ?? '');
}

type Caller = { callTool: (p: { name: string; arguments?: Record<string, unknown> }) => Promise<unknown> };
async function call(client: Caller, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }> };
  return result.content[0]?.text ?? '';
}

describe('serve --shared: one sandbox, many sessions', () => {
  let served: Served;
  let sharedTrace: string;
  beforeAll(async () => {
    sharedTrace = join(mkdtempSync(join(tmpdir(), 'mcp-shared-')), 'trace.jsonl');
    served = await startServe(['--mount', `${REPO}:ro`, '--shared', '--trace', sharedTrace], ['node', NOTES]);
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
  });

  it('two clients with the same request ids each get their own answers, and see one server state', async () => {
    const a = await v1(served);
    const b = await v2(served);
    try {
      // Both SDKs number requests from 0: these calls carry the same ids at the same time.
      const [fromA, fromB] = await Promise.all([
        call(a, 'slow', { ms: 400, tag: 'A' }),
        call(b, 'slow', { ms: 200, tag: 'B' }),
      ]);
      expect([fromA, fromB]).toEqual(['slow done: A', 'slow done: B']);
      expect(await call(a, 'remember', { note: 'from A' })).toBe('stored 1');
      // The control for the per-session test below: shared, B sees what A stored.
      expect(JSON.parse(await call(b, 'recall'))).toEqual(['from A']);
      expect(a.getServerVersion()).toMatchObject({ name: 'notes-server' });
      expect(b.getServerVersion()).toMatchObject({ name: 'notes-server' });
    } finally {
      await a.close();
      await b.close();
    }
    expect(served.stderr()).toMatch(/--shared: one sandbox serves every session/);
  }, 60_000);

  it("a server's sampling request reaches the client whose call caused it, and its answer reaches the server", async () => {
    const a = await v1(served, 'answer from A');
    const b = await v2(served, 'answer from B');
    try {
      expect(await call(a, 'ask', { question: 'q1' })).toBe('the client said: answer from A');
      expect(await call(b, 'ask', { question: 'q2' })).toBe('the client said: answer from B');
      expect(await call(a, 'ask', { question: 'q3' })).toBe('the client said: answer from A');
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);

  it('finding 3: a server request with no link, while two clients are busy, reaches neither (it never goes to the newest)', async () => {
    const seenByA: string[] = [];
    const seenByB: string[] = [];
    const a = await v1(served, 'answer from A', undefined, seenByA);
    const b = await v2(served, 'answer from B', seenByB);
    try {
      // B is busy: its call is in flight (its progress arrived) and lasts well past A's.
      let inFlight: () => void = () => {};
      const started = new Promise<void>((resolve) => {
        inFlight = resolve;
      });
      const busy = b.callTool(
        { name: 'slow', arguments: { ms: 8000, tag: 'B' } },
        { onprogress: () => inFlight(), timeout: 30_000 },
      );
      busy.catch(() => {}); // awaited below; a failed assertion must not leave it unhandled
      await started;
      // A's call makes the server ask for a sampling: the request names neither call.
      const fromA = await call(a, 'ask', { question: 'my password is hunter2' });
      expect(seenByB).toEqual([]);
      expect(seenByA).toEqual([]);
      expect(fromA).not.toMatch(/answer from/);
      expect(fromA).toMatch(/-32603/);
      expect(fromA).toMatch(/cannot tell which session/);
      await busy;
      // The control: with only A busy, A is provably the one asked, and answers.
      expect(await call(a, 'ask', { question: 'q2' })).toBe('the client said: answer from A');
      expect(seenByA).toEqual(['q2']);
    } finally {
      await a.close();
      await b.close();
    }
    expect(served.stderr()).toMatch(/--shared: sampling\/createMessage: .*cannot tell which session/);
    // The trace records the refusal the server got, with its reason.
    expect(readFileSync(sharedTrace, 'utf8')).toMatch(
      /mcp-sandbox --shared: sampling\/createMessage: .*cannot tell/,
    );
  }, 60_000);
});

describe('serve (default): a sandbox per session', () => {
  let served: Served;
  beforeAll(async () => {
    served = await startServe(['--mount', `${REPO}:ro`], ['node', NOTES]);
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
  });

  it("one client's state is not visible to another", async () => {
    const a = await v1(served);
    const b = await v2(served);
    try {
      expect(await call(a, 'remember', { note: 'secret of A' })).toBe('stored 1');
      expect(JSON.parse(await call(b, 'recall'))).toEqual([]);
      expect(JSON.parse(await call(a, 'recall'))).toEqual(['secret of A']);
    } finally {
      await a.close();
      await b.close();
    }
  }, 60_000);

  it('a client whose SSE stream drops mid-call reconnects with Last-Event-ID and receives the result', async () => {
    let cut = false;
    let resumedWith: string | null = null;
    // A network drop: the tools/call stream passes its first chunk (the priming event), then fails.
    const dropping: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      if (init?.method === 'GET' && headers.get('last-event-id')) resumedWith = headers.get('last-event-id');
      const res = await fetch(input, init);
      const sent = typeof init?.body === 'string' ? init.body : '';
      if (cut || init?.method !== 'POST' || !sent.includes('"slow"') || !res.body) return res;
      cut = true;
      const reader = res.body.getReader();
      let chunks = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (chunks++ === 0) {
            const { value } = await reader.read();
            if (value) controller.enqueue(value);
            return;
          }
          await reader.cancel();
          controller.error(new TypeError('network connection lost'));
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const client = await v1(served, undefined, dropping);
    try {
      // The result comes while the client is away (it reconnects after about a second).
      expect(await call(client, 'slow', { ms: 300, tag: 'resumed' })).toBe('slow done: resumed');
      expect(cut).toBe(true); // the control: the stream really dropped
      expect(resumedWith).toMatch(/^[A-Za-z0-9_-]{16}\.0$/);
      expect(await call(client, 'recall')).toBe('[]'); // the session goes on
    } finally {
      await client.close();
    }
  }, 60_000);
});
