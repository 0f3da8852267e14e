import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, line, spawnBin, stdoutMessages, traceRecords, waitFor } from './helpers.js';
import { type Served, startServe, TOKEN } from './serve-helpers.js';
import { connectV2, modernMeta } from './v2-helpers.js';

// Issue 31, findings 1, 2 and 7, from the attacker's side: a hostile server (fixtures/pin-server.mjs)
// that lists a tool twice, that behaves for its first listing only, or that names a denied tool in
// the answer to a batched handshake. Real SDK clients, the built binary, `--backend none`.

const PIN_SERVER = fileURLToPath(new URL('./fixtures/pin-server.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-tool-pins-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);
const callEcho = (client: Client) =>
  client.callTool({ name: 'echo', arguments: { text: 'hi' } }).then(
    (r) => JSON.stringify(r),
    (e: Error) => `refused: ${e.message}`,
  );

function pinArgs(pins: string, mode: string, extra: string[] = []): string[] {
  return [
    '--backend',
    'none',
    '--pin-tools',
    pins,
    '--pin-tools-strict',
    '--env',
    `PIN_MODE=${mode}`,
    ...extra,
  ];
}

describe('a tool listed twice (issue 31, finding 1)', () => {
  it('attack: echo listed twice, first with a changed description, gets no call through', async () => {
    const pins = join(dir, 'duplicate.json');
    const honest = await connect([...pinArgs(pins, 'honest'), '--', process.execPath, PIN_SERVER]);
    try {
      expect(await names(honest.client)).toEqual(['echo', 'add']);
    } finally {
      await honest.client.close();
    }
    const trace = join(dir, 'duplicate.jsonl');
    const c = await connect([
      ...pinArgs(pins, 'duplicate', ['--trace', trace]),
      '--',
      process.execPath,
      PIN_SERVER,
    ]);
    let listed: string[];
    let called: string;
    let control: string;
    try {
      listed = await names(c.client);
      called = await callEcho(c.client);
      control = JSON.stringify(await c.client.callTool({ name: 'add', arguments: {} }));
    } finally {
      await c.client.close();
    }
    // Before the fix: ["echo","add","echo"], and the call ran ("ECHO-RAN hi").
    expect(listed).toEqual(['add']);
    expect(called).toMatch(/^refused: .*not allowed by this session's policy/);
    expect(called).not.toContain('ECHO-RAN');
    expect(control).toContain('ADD-RAN');
    expect(c.stderr()).toMatch(/tool "echo" is listed more than once/);
    const records = traceRecords(trace);
    expect(records.some((r) => r.type === 'policy' && r.action === 'ambiguous' && r.tool === 'echo')).toBe(
      true,
    );
    expect(records.some((r) => JSON.stringify(r).includes('ECHO-RAN'))).toBe(false);
  });

  it('attack in a 2026-07-28 session (v2 client): the same duplicate gets no call through', async () => {
    const pins = join(dir, 'duplicate-modern.json');
    const run = (mode: string) => [...pinArgs(pins, mode), '--', process.execPath, PIN_SERVER];
    const honest = await connectV2({ run: true, args: run('honest') }, 'modern');
    try {
      expect((await honest.client.listTools()).tools.map((t) => t.name)).toEqual(['echo', 'add']);
    } finally {
      await honest.client.close();
    }
    const c = await connectV2({ run: true, args: run('duplicate') }, 'modern');
    try {
      expect((await c.client.listTools()).tools.map((t) => t.name)).toEqual(['add']);
      await expect(c.client.callTool({ name: 'echo', arguments: { text: 'hi' } })).rejects.toThrow(
        /not allowed by this session's policy \(listed more than once\)/,
      );
    } finally {
      await c.client.close();
    }
    expect(c.stderr()).toMatch(/tool "echo" is listed more than once/);
  });
});

describe('first-run pinning ends with the first listing (issue 31, finding 2)', () => {
  it('attack in run: a server that changes echo after its first listing is drift, and the pin file keeps the first digest', async () => {
    const pins = join(dir, 'later-run.json');
    const state = join(dir, 'later-run.state');
    const trace = join(dir, 'later-run.jsonl');
    const c = await connect([
      ...pinArgs(pins, 'later', ['--env', `PIN_STATE=${state}`, '--trace', trace]),
      '--',
      process.execPath,
      PIN_SERVER,
    ]);
    let pinned: string;
    let second: string[];
    let called: string;
    try {
      // Control: the first listing is pinned, and echo is called.
      expect(await names(c.client)).toEqual(['echo', 'add']);
      pinned = readFileSync(pins, 'utf8');
      expect(await callEcho(c.client)).toContain('ECHO-RAN hi');
      second = await names(c.client);
      called = await callEcho(c.client);
    } finally {
      await c.client.close();
    }
    // Before the fix the second listing was pinned as well: echo listed and called, no warning.
    expect(second).toEqual(['add']);
    expect(called).toMatch(/^refused: .*pin-tools-strict/);
    expect(c.stderr()).toContain('tool "echo" was changed since the tools were pinned');
    expect(traceRecords(trace).some((r) => r.type === 'pin-drift' && r.tool === 'echo')).toBe(true);
    expect(readFileSync(pins, 'utf8')).toBe(pinned);
  });

  it('attack across two serve processes: the tool poisoned in a later session is drift there and in the next serve', async () => {
    const pins = join(dir, 'later-serve.json');
    const state = join(dir, 'later-serve.state');
    const args = pinArgs(pins, 'later', ['--env', `PIN_STATE=${state}`]);
    const httpClient = async (served: Served) => {
      const client = new Client({ name: 'pin-test', version: '1.0.0' }, { capabilities: {} });
      const headers = { Authorization: `Bearer ${TOKEN}` };
      await client.connect(
        new StreamableHTTPClientTransport(new URL(served.url), { requestInit: { headers } }),
      );
      return client;
    };
    const session = async (served: Served) => {
      const client = await httpClient(served);
      try {
        return { listed: await names(client), called: await callEcho(client) };
      } finally {
        await client.close();
      }
    };
    const first = await startServe(args, [process.execPath, PIN_SERVER]);
    let a: { listed: string[]; called: string };
    let b: { listed: string[]; called: string };
    let pinned: string;
    try {
      // Control: the first session's server behaves, and its listing is pinned.
      a = await session(first);
      pinned = readFileSync(pins, 'utf8');
      b = await session(first);
    } finally {
      await first.stop();
    }
    expect(a.listed).toEqual(['echo', 'add']);
    expect(a.called).toContain('ECHO-RAN hi');
    // Before the fix the shared policy pinned the second session's poisoned listing too.
    expect(b.listed).toEqual(['add']);
    expect(b.called).toMatch(/^refused: .*pin-tools-strict/);
    expect(first.stderr()).toContain('tool "echo" was changed since the tools were pinned');
    expect(readFileSync(pins, 'utf8')).toBe(pinned);

    const next = await startServe(args, [process.execPath, PIN_SERVER]);
    let c: { listed: string[]; called: string };
    try {
      c = await session(next);
    } finally {
      await next.stop();
    }
    expect(c.listed).toEqual(['add']);
    expect(c.called).toMatch(/^refused: .*pin-tools-strict/);
    expect(readFileSync(pins, 'utf8')).toBe(pinned);
  }, 60_000);
});

describe('a batched handshake or listing under a policy (issue 31, finding 7)', () => {
  const through = async (batch: unknown[], deny: string, mode = 'describe') => {
    const run = spawnBin(
      [
        'run',
        '--backend',
        'none',
        '--quiet',
        '--deny-tool',
        deny,
        '--env',
        `PIN_MODE=${mode}`,
        '--',
        process.execPath,
        PIN_SERVER,
      ],
      { PATH: process.env.PATH ?? '' },
    );
    run.child.stdin.write(line(batch));
    // The answer comes before the client goes: stdin stays open until then (or for 20 s).
    await waitFor(() => stdoutMessages(run.stdoutSoFar()).length > 0, 20_000, 'an answer').catch(
      () => undefined,
    );
    run.child.stdin.end();
    const { stdout } = await run.result;
    return { text: stdout.toString(), messages: stdoutMessages(stdout) };
  };

  it('attack: a batched initialize advertises no denied tool', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const { text, messages } = await through([init], 'secret-*');
    // Control: the answer came through, with the allowed tool it names.
    expect(messages.map((m) => m.id)).toEqual([1]);
    expect(text).toContain('"serverInfo"');
    expect(text).toContain('"name":"echo"');
    expect(text).not.toContain('secret-admin');
  });

  it('attack: a batched 2026-07-28 server/discover advertises no denied tool', async () => {
    const discover = { jsonrpc: '2.0', id: 'd', method: 'server/discover', params: { _meta: modernMeta() } };
    const { text, messages } = await through([discover], 'secret-*');
    expect(messages.map((m) => m.id)).toEqual(['d']);
    expect(text).toContain('"supportedVersions":["2026-07-28"]');
    expect(text).toContain('"name":"echo"');
    expect(text).not.toContain('secret-admin');
  });

  it('a batched tools/list gets the listing filter', async () => {
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const { text, messages } = await through([list], 'add');
    expect(messages.map((m) => m.id)).toEqual([2]);
    expect(text).toContain('"name":"echo"');
    expect(text).not.toContain('"name":"add"');
  });

  it('attack: a batched initialize answered with a batch is refused, and its request answered at once', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const { text, messages } = await through([init], 'secret-*', 'array');
    expect(text).not.toContain('secret-admin');
    // Before: the array line was dropped and the request waited for the client to go (-32000).
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ id: 1, error: { code: -32003 } });
    const error = messages[0]?.error as { message?: string } | undefined;
    expect(String(error?.message)).toMatch(/a batch holding a response/);
  });
});
