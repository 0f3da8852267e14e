import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '../src/testing/index.js';
import { bridgeSession, collect, fakeBackend, LineTransport, SERVER_EVERYTHING } from './helpers.js';

let fake: FakeE2B;
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterAll(async () => {
  await fake.close();
});

const CANARY = 'MCPSANDBOX_E2B_HOST_CANARY';

describe('server-everything through the e2b backend (real SDK, fake E2B)', () => {
  it('the MCP SDK client lists and calls tools through the bridge, and the VM is gone after', async () => {
    process.env[CANARY] = 'host-only-value';
    const run = bridgeSession(fakeBackend(fake), ['node', SERVER_EVERYTHING, 'stdio'], {
      env: { ALLOWED_VAR: 'granted' },
      ttlMs: 90_000,
    });
    try {
      // No capabilities advertised: server-everything then offers its 13 base tools.
      const client = new Client({ name: 'e2b-test', version: '1.0.0' }, { capabilities: {} });
      await client.connect(new LineTransport(run.clientOut, run.clientIn));
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(13);
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'get-env', 'get-sum']));

      const echo = await client.callTool({ name: 'echo', arguments: { message: 'through a micro-VM' } });
      expect(JSON.stringify(echo.content)).toContain('through a micro-VM');

      const env = await client.callTool({ name: 'get-env', arguments: {} });
      const text = JSON.stringify(env.content);
      expect(text).toContain('ALLOWED_VAR');
      expect(text).toContain('granted');
      // Read on the host, never forwarded: neither the API key nor any host variable.
      expect(text).not.toContain(FAKE_API_KEY);
      expect(text).not.toContain('E2B_API_KEY');
      expect(text).not.toContain('host-only-value');

      await client.close();
      const result = await run.session.done;
      expect(result).toMatchObject({ reason: 'client-eof', exitCode: 0 });

      const created = [...fake.sandboxes.values()].at(-1)!;
      expect(created.create.metadata).toMatchObject({ createdBy: 'mcp-sandbox' });
      expect(created.create.metadata?.sessionId).toMatch(/^test-/);
      expect(created.create.timeout).toBe(90);
      expect(created.create.templateID).toBe('base');
      expect(created.create.allow_internet_access).toBe(false);
      expect(created.create.envVars).toBeUndefined();
      expect(created.alive).toBe(false);
      const trace = run.trace();
      expect(trace.filter((r) => r.type === 'message').length).toBeGreaterThanOrEqual(8);
      expect(trace.find((r) => r.type === 'sandbox-created')).toMatchObject({
        backend: 'e2b',
        isolation: 'microvm',
      });
    } finally {
      delete process.env[CANARY];
    }
  });

  it('control: a variable the user grants by name does reach the server', async () => {
    const run = bridgeSession(fakeBackend(fake), ['node', SERVER_EVERYTHING, 'stdio'], {
      env: { E2B_API_KEY: 'user-granted-key' },
    });
    const client = new Client({ name: 'e2b-test', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new LineTransport(run.clientOut, run.clientIn));
    const env = await client.callTool({ name: 'get-env', arguments: {} });
    expect(JSON.stringify(env.content)).toContain('user-granted-key');
    await client.close();
    await run.session.done;
  });

  it('--setup steps run in the VM before the server; a failing one stops the session with 125', async () => {
    const ok = bridgeSession(fakeBackend(fake), ['cat', 'note.json'], {
      setup: [`printf '%s\\n' '{"jsonrpc":"2.0","method":"written-by-setup"}' > note.json`],
    });
    const received = collect(ok.clientOut);
    const result = await ok.session.done;
    ok.clientIn.end();
    ok.clientOut.end();
    expect(result).toMatchObject({ reason: 'server-exit', exitCode: 0 });
    expect((await received).toString()).toBe('{"jsonrpc":"2.0","method":"written-by-setup"}\n');

    const failing = bridgeSession(fakeBackend(fake), ['cat', 'note.json'], { setup: ['exit 4'] });
    const failed = await failing.session.done;
    failing.clientIn.end();
    expect(failed).toMatchObject({ reason: 'sandbox-failure', exitCode: 125 });
    expect(failed.error?.code).toBe('E_SETUP_FAILED');
    expect(failing.trace().some((r) => r.type === 'process-start')).toBe(false);
  });

  it('raw JSON-RPC lines: initialize, tools/list, tools/call in order, then a clean exit on stdin EOF', async () => {
    const box = await fakeBackend(fake).create({ sessionId: 'raw-lines', env: {}, ttlMs: 60_000 });
    try {
      const proc = await box.exec(['node', SERVER_EVERYTHING, 'stdio']);
      const lines = readLines(proc.stdout);
      const send = (message: object) => proc.write(Buffer.from(`${JSON.stringify(message)}\n`));
      // Written back to back without waiting: the serialized stdin keeps them in order.
      void send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      });
      void send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      void send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      void send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'get-sum', arguments: { a: 2, b: 3 } },
      });
      const replies: { id: number; result: { tools?: unknown[]; content?: { text: string }[] } }[] = [];
      while (replies.length < 3) {
        const next = await lines.next();
        if (next.done) throw new Error('server ended early');
        const message = JSON.parse(next.value) as (typeof replies)[number] & { method?: string };
        if (message.method === undefined) replies.push(message); // skip the server's notifications
      }
      expect(replies.map((r) => r.id)).toEqual([1, 2, 3]);
      expect(replies[1]?.result.tools).toHaveLength(13);
      expect(replies[2]?.result.content?.[0]?.text).toContain('5');
      await proc.closeStdin();
      expect(await proc.exit).toEqual({ code: 0, signal: null });
    } finally {
      await box.close();
    }
  });
});

async function* readLines(stream: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  let buffer = '';
  for await (const chunk of stream) {
    buffer += Buffer.from(chunk).toString();
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      yield buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
    }
  }
}
