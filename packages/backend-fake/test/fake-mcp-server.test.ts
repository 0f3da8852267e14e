import type { Sandbox, SandboxProcess } from '@mcpsandbox/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createFakeBackend,
  FAKE_MCP_DEFAULT_PROTOCOL_VERSION,
  type FakeBackendOptions,
  parseFakeMcpServerArgs,
} from '../src/index.js';
import { collect, Lines, request, send, settle, stillPending } from './helpers.js';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((box) => box.close()));
});

interface Server {
  readonly proc: SandboxProcess;
  readonly out: Lines;
}

async function server(
  flags: string[] = [],
  options: { env?: Record<string, string>; backend?: FakeBackendOptions } = {},
): Promise<Server> {
  const box = await createFakeBackend(options.backend).create({
    sessionId: 't',
    env: options.env ?? {},
    ttlMs: 60_000,
  });
  open.push(box);
  const proc = await box.exec(['fake-mcp-server', ...flags]);
  return { proc, out: new Lines(proc.stdout) };
}

type Json = Record<string, unknown>;
const result = (message: Json) => message.result as Json;
const text = (message: Json) => ((result(message).content as Json[])[0] as Json).text as string;

describe('fake-mcp-server', () => {
  it('answers initialize, echoing the protocol version, and names itself', async () => {
    const { proc, out } = await server();
    await send(proc, request(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {} }));
    const reply = await out.json();
    expect(reply).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: {
        protocolVersion: '2025-06-18',
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'fake-mcp-server', version: expect.any(String) },
      },
    });
    await send(proc, { jsonrpc: '2.0', method: 'notifications/initialized' });
    await send(proc, request(2, 'initialize', {}));
    expect(result(await out.json()).protocolVersion).toBe(FAKE_MCP_DEFAULT_PROTOCOL_VERSION);
    await proc.closeStdin();
    expect(await proc.exit).toEqual({ code: 0, signal: null });
  });

  it('answers ping and lists its tools without a handshake first', async () => {
    const { proc, out } = await server();
    await send(proc, request(1, 'ping'));
    expect(await out.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    await send(proc, request(2, 'tools/list'));
    const tools = result(await out.json()).tools as Json[];
    expect(tools.map((tool) => tool.name)).toEqual(['echo', 'add', 'get-env', 'slow', 'big']);
    for (const tool of tools) expect((tool.inputSchema as Json).type).toBe('object');
  });

  it('calls echo, add and get-env (which shows exactly the sandbox env)', async () => {
    const box = await createFakeBackend().create({ sessionId: 't', env: { SPEC_VAR: 'a' }, ttlMs: 60_000 });
    open.push(box);
    const proc = await box.exec(['fake-mcp-server'], { env: { EXEC_VAR: 'b' } });
    const out = new Lines(proc.stdout);
    await send(proc, request(1, 'tools/call', { name: 'echo', arguments: { text: 'héllo €' } }));
    expect(text(await out.json())).toBe('héllo €');
    await send(proc, request(2, 'tools/call', { name: 'add', arguments: { a: 2, b: 40.5 } }));
    expect(text(await out.json())).toBe('42.5');
    await send(proc, request(3, 'tools/call', { name: 'get-env', arguments: {} }));
    expect(JSON.parse(text(await out.json()))).toEqual({ SPEC_VAR: 'a', EXEC_VAR: 'b' });
  });

  it('reports bad tool arguments as a tool error and an unknown tool as -32602', async () => {
    const { proc, out } = await server();
    await send(proc, request(1, 'tools/call', { name: 'add', arguments: { a: '1', b: 2 } }));
    const bad = result(await out.json());
    expect(bad.isError).toBe(true);
    await send(proc, request(2, 'tools/call', { name: 'nope', arguments: {} }));
    expect((await out.json()).error).toMatchObject({ code: -32602 });
  });

  it('answers unknown methods, bad JSON and non-requests with JSON-RPC errors', async () => {
    const { proc, out } = await server();
    await send(proc, request(1, 'resources/list'));
    expect(await out.json()).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32601, message: 'Method not found: resources/list' },
    });
    await send(proc, '{"jsonrpc":"2.0", "id": 2, "method": ');
    expect(await out.json()).toMatchObject({ id: null, error: { code: -32700 } });
    await send(proc, '[1,2]');
    expect(await out.json()).toMatchObject({ id: null, error: { code: -32600 } });
    await send(proc, '{"jsonrpc":"2.0","id":"r"}');
    expect(await out.json()).toMatchObject({ id: 'r', error: { code: -32600 } });
  });

  it('sends nothing for notifications and for responses', async () => {
    const { proc, out } = await server();
    await send(proc, { jsonrpc: '2.0', method: 'notifications/initialized' });
    await send(proc, { jsonrpc: '2.0', method: 'notifications/whatever', params: {} });
    await send(proc, { jsonrpc: '2.0', id: 99, result: {} });
    await send(proc, request(7, 'ping'));
    expect((await out.json()).id).toBe(7);
    await proc.closeStdin();
    expect(await out.raw()).toBeUndefined();
  });

  it('echoes request ids byte for byte, including numbers a double cannot hold', async () => {
    const { proc, out } = await server();
    const ids = [
      '9007199254740993',
      '1.0e3',
      '-0',
      '123456789012345678901234567890',
      '"a\\u0062c"',
      '"\\"}"',
    ];
    for (const id of ids) {
      await send(proc, `{"jsonrpc":"2.0","method":"ping","id":${id}}`);
      expect(await out.raw()).toBe(`{"jsonrpc":"2.0","id":${id},"result":{}}\n`);
    }
    // Spacing, an escaped key, nested ids and duplicate keys: the top-level, last "id" counts.
    await send(proc, '{ "params" : {"id": 1}, "jsonrpc":"2.0", "\\u0069d" :  77 , "method":"ping"}');
    expect(await out.raw()).toBe('{"jsonrpc":"2.0","id":77,"result":{}}\n');
    await send(proc, '{"id":1,"jsonrpc":"2.0","method":"ping","id":9007199254740995}');
    expect(await out.raw()).toBe('{"jsonrpc":"2.0","id":9007199254740995,"result":{}}\n');
  });

  it('control: the same id through JSON.parse would not survive', () => {
    expect(JSON.stringify(JSON.parse('{"id":9007199254740993}'))).not.toContain('9007199254740993');
  });

  it('accepts requests split across writes and several in one write', async () => {
    const { proc, out } = await server();
    const bytes = Buffer.from(
      `${JSON.stringify(request(1, 'tools/call', { name: 'echo', arguments: { text: '€uro' } }))}\n${JSON.stringify(request(2, 'ping'))}\n`,
    );
    for (let i = 0; i < bytes.length; i++) await proc.write(bytes.subarray(i, i + 1));
    expect(text(await out.json())).toBe('€uro');
    expect((await out.json()).id).toBe(2);
    // A last line without a newline is still answered at EOF.
    await proc.write(Buffer.from(JSON.stringify(request(3, 'ping'))));
    await proc.closeStdin();
    expect((await out.json()).id).toBe(3);
    expect((await proc.exit).code).toBe(0);
  });

  it('answers a slow call after faster ones, and still before exiting on EOF', async () => {
    const { proc, out } = await server();
    await send(proc, request(1, 'tools/call', { name: 'slow', arguments: { ms: 200 } }));
    await send(proc, request(2, 'ping'));
    expect((await out.json()).id).toBe(2);
    await proc.closeStdin();
    const slow = await out.json();
    expect(slow.id).toBe(1);
    expect(text(slow)).toBe('slept 200 ms');
    expect(await proc.exit).toEqual({ code: 0, signal: null });
  });

  it('drops the answer of a slow call the client cancelled', async () => {
    const { proc, out } = await server();
    await send(proc, request(1, 'tools/call', { name: 'slow', arguments: { ms: 60_000 } }));
    await send(proc, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    await send(proc, request(2, 'ping'));
    expect((await out.json()).id).toBe(2);
    await proc.closeStdin();
    expect(await out.raw()).toBeUndefined();
    expect(await proc.exit).toEqual({ code: 0, signal: null });
  });

  it('stops reading requests while its answers are not read (bounded memory)', async () => {
    const { proc, out } = await server([], { backend: { highWaterMark: 1024 } });
    const total = 2000;
    let accepted = 0;
    const writes = Array.from({ length: total }, (_, id) =>
      send(proc, request(id, 'ping')).then(() => {
        accepted++;
      }),
    );
    await settle(50);
    // Answers fill stdout, the server stops reading, stdin fills: the client's writes wait.
    expect(accepted).toBeGreaterThan(0);
    expect(accepted).toBeLessThan(total / 2);
    const ids: unknown[] = [];
    for (let i = 0; i < total; i++) ids.push((await out.json()).id);
    await Promise.all(writes);
    expect(ids).toEqual(Array.from({ length: total }, (_, id) => id));
  });

  it('returns a huge text from the big tool as one line', async () => {
    const { proc, out } = await server();
    const bytes = 20 * 1024 * 1024;
    await send(proc, request(1, 'tools/call', { name: 'big', arguments: { bytes } }));
    const line = await out.raw();
    expect(line?.length).toBeGreaterThan(bytes);
    expect(line?.endsWith('}\n')).toBe(true);
    const reply = JSON.parse(line!) as Json;
    expect(text(reply).length).toBe(bytes);
    expect(text(reply)).toMatch(/^x+$/);
  });

  it('exits with 64 and a usage on stderr for an unknown flag', async () => {
    const { proc } = await server(['--wat']);
    const stderr = collect(proc.stderr);
    expect(await proc.exit).toEqual({ code: 64, signal: null });
    expect((await stderr).toString()).toContain('unknown flag "--wat"');
    expect(() => parseFakeMcpServerArgs(['--start-delay'])).toThrow(/non-negative integer/);
    expect(() => parseFakeMcpServerArgs(['--exit-code', '300'])).toThrow(/0-255/);
  });
});

describe('fake-mcp-server misbehaviours', () => {
  it('--dribble writes every byte on its own, and lines stay whole and in order', async () => {
    const { proc, out } = await server(['--dribble']);
    await send(proc, request(1, 'tools/call', { name: 'slow', arguments: { ms: 30 } }));
    await send(proc, request(2, 'tools/call', { name: 'echo', arguments: { text: '€€€' } }));
    const first = await out.json();
    const second = await out.json();
    expect([first.id, second.id]).toEqual([2, 1]);
    expect(text(first)).toBe('€€€');
    expect(out.chunks.length).toBeGreaterThan(50);
    expect(out.chunks.every((chunk) => chunk.length === 1)).toBe(true);
  });

  it('control: without --dribble a response is one chunk', async () => {
    const { proc, out } = await server();
    await send(proc, request(1, 'ping'));
    await out.json();
    expect(out.chunks.length).toBe(1);
  });

  it('--noise writes lines that are not JSON at start and before every response', async () => {
    const { proc, out } = await server(['--noise']);
    const skipped: string[] = [];
    await send(proc, request(1, 'ping'));
    await send(proc, request(2, 'ping'));
    expect((await out.json(skipped)).id).toBe(1);
    expect((await out.json(skipped)).id).toBe(2);
    expect(skipped).toHaveLength(3);
    for (const line of skipped) expect(() => JSON.parse(line)).toThrow();
    expect(skipped.some((line) => line.startsWith('{'))).toBe(true);
  });

  it('--start-delay reads nothing from stdin until the delay has passed', async () => {
    const started = Date.now();
    // A tiny pipe, so that a write can only finish once the server reads.
    const { proc, out } = await server(['--start-delay', '300'], { backend: { highWaterMark: 16 } });
    // The first line fills the pipe; the second can only be accepted once the server reads.
    await send(proc, request(1, 'ping'));
    await send(proc, request(2, 'ping'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect((await out.json()).id).toBe(1);
  });

  it('--exit-after n --exit-code c answers n requests, then exits with c', async () => {
    const { proc, out } = await server(['--exit-after', '2', '--exit-code', '7']);
    for (const id of [1, 2, 3]) await send(proc, request(id, 'ping')).catch(() => undefined);
    expect((await out.json()).id).toBe(1);
    expect((await out.json()).id).toBe(2);
    expect(await proc.exit).toEqual({ code: 7, signal: null });
    expect(await out.raw()).toBeUndefined();
    await expect(send(proc, request(4, 'ping'))).rejects.toThrow();
  });

  it('--exit-after 0 exits before reading anything, with code 1 by default', async () => {
    const { proc } = await server(['--exit-after', '0']);
    expect(await proc.exit).toEqual({ code: 1, signal: null });
  });

  it('--ignore-eof keeps running after stdin ends, until killed', async () => {
    const { proc, out } = await server(['--ignore-eof']);
    const stderr = collect(proc.stderr);
    await send(proc, request(1, 'ping'));
    await proc.closeStdin();
    expect((await out.json()).id).toBe(1);
    expect(await stillPending(proc.exit, 200)).toBe('pending');
    await proc.kill('SIGTERM');
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGTERM' });
    expect((await stderr).toString()).toContain('ignoring EOF');
  });

  it('control: without --ignore-eof it exits 0 on EOF', async () => {
    const { proc } = await server();
    await proc.closeStdin();
    expect(await proc.exit).toEqual({ code: 0, signal: null });
  });

  it('--ignore-sigterm survives SIGTERM (and says so on stderr) but not SIGKILL', async () => {
    const { proc, out } = await server(['--ignore-sigterm']);
    const stderr = new Lines(proc.stderr);
    await send(proc, request(1, 'ping'));
    await out.json();
    await proc.kill('SIGTERM');
    expect(await stderr.raw()).toBe('fake-mcp-server: ignoring SIGTERM\n');
    expect(await stillPending(proc.exit, 200)).toBe('pending');
    await send(proc, request(2, 'ping'));
    expect((await out.json()).id).toBe(2);
    await proc.kill('SIGKILL');
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('control: without --ignore-sigterm SIGTERM ends it', async () => {
    const { proc, out } = await server();
    await send(proc, request(1, 'ping'));
    await out.json();
    await proc.kill('SIGTERM');
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('--stderr-flood writes exactly that many bytes and stalls until stderr is drained', async () => {
    const bytes = 1_000_000;
    const { proc, out } = await server(['--stderr-flood', String(bytes)]);
    await send(proc, request(1, 'ping'));
    const reply = out.json();
    // Nobody reads stderr yet: the pipe fills and the server cannot get to stdin.
    expect(await stillPending(reply, 200)).toBe('pending');
    const stderr = collect(proc.stderr);
    expect((await reply).id).toBe(1);
    await proc.closeStdin();
    const flood = await stderr;
    expect(flood.length).toBe(bytes);
    expect(flood.toString().split('\n')[0]).toMatch(/^fake-mcp-server: stderr flood/);
  });

  it('--crlf ends every output line with \\r\\n, and CRLF input is understood', async () => {
    const { proc, out } = await server(['--crlf', '--noise']);
    await proc.write(Buffer.from(`${JSON.stringify(request(1, 'ping'))}\r\n`));
    const lines = [await out.raw(), await out.raw(), await out.raw()];
    expect(lines.every((line) => line?.endsWith('\r\n'))).toBe(true);
    expect(lines[2]).toBe('{"jsonrpc":"2.0","id":1,"result":{}}\r\n');
  });

  it('flags combine: dribbled, noisy CRLF output still carries whole responses', async () => {
    const { proc, out } = await server(['--dribble', '--noise', '--crlf']);
    await send(proc, request('x', 'tools/call', { name: 'add', arguments: { a: 1, b: 1 } }));
    const skipped: string[] = [];
    const reply = await out.json(skipped);
    expect(text(reply)).toBe('2');
    expect(skipped.length).toBe(2);
    await settle();
  });
});
