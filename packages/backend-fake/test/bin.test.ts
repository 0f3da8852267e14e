import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runFakeMcpServer } from '../src/index.js';
import { collect, Lines, request, stillPending } from './helpers.js';

// The built executable: these tests run the fake server as a real process.
const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: build the package first (tsc -b)`);
});

const clients: Client[] = [];
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

async function connect(args: string[] = [], env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, ...args],
    env,
    stderr: 'pipe',
  });
  // No capabilities advertised: the tool list does not depend on them anyway, but pin it.
  const client = new Client({ name: 'backend-fake-test', version: '0.0.0' }, { capabilities: {} });
  await client.connect(transport);
  clients.push(client);
  return client;
}

function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text: string }[] }).content;
  return content[0]!.text;
}

describe('mcpsandbox-fake-server with the MCP SDK client', () => {
  it('initializes, lists and calls tools over stdio', async () => {
    const client = await connect([], { FAKE_ONLY: 'yes' });
    expect(client.getServerVersion()?.name).toBe('fake-mcp-server');
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    await client.ping();
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['echo', 'add', 'get-env', 'slow', 'big']);
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hi €' } }))).toBe('hi €');
    expect(textOf(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }))).toBe('5');
    const env = JSON.parse(textOf(await client.callTool({ name: 'get-env', arguments: {} }))) as Record<
      string,
      string
    >;
    expect(env.FAKE_ONLY).toBe('yes');
    const big = await client.callTool({ name: 'big', arguments: { bytes: 1_000_000 } });
    expect(textOf(big).length).toBe(1_000_000);
  });

  it('still works when the output is dribbled byte by byte with CRLF line ends after a slow start', async () => {
    const client = await connect(['--dribble', '--crlf', '--start-delay', '100']);
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(5);
    expect(textOf(await client.callTool({ name: 'add', arguments: { a: 20, b: 22 } }))).toBe('42');
  });
});

function start(args: string[]): { child: ChildProcessWithoutNullStreams; out: Lines; err: Lines } {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: 'pipe' });
  children.push(child);
  return { child, out: new Lines(child.stdout), err: new Lines(child.stderr) };
}

function exitOf(
  child: ChildProcessWithoutNullStreams,
): Promise<{ code: number | null; signal: string | null }> {
  return once(child, 'exit').then(([code, signal]) => ({ code, signal }));
}

describe('mcpsandbox-fake-server as a real process', () => {
  it('forwards a JSON number id byte for byte', async () => {
    const { child, out } = start([]);
    child.stdin.write('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}\n');
    expect(await out.raw()).toBe('{"jsonrpc":"2.0","id":9007199254740993,"result":{}}\n');
    child.stdin.end();
    expect(await exitOf(child)).toEqual({ code: 0, signal: null });
  });

  it('--ignore-sigterm survives SIGTERM, SIGKILL ends it', async () => {
    const { child, out, err } = start(['--ignore-sigterm']);
    const exit = exitOf(child);
    child.stdin.write(`${JSON.stringify(request(1, 'ping'))}\n`);
    await out.raw();
    child.kill('SIGTERM');
    expect(await err.raw()).toBe('fake-mcp-server: ignoring SIGTERM\n');
    expect(await stillPending(exit, 300)).toBe('pending');
    child.kill('SIGKILL');
    expect(await exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('control: without --ignore-sigterm SIGTERM ends it', async () => {
    const { child, out } = start([]);
    const exit = exitOf(child);
    child.stdin.write(`${JSON.stringify(request(1, 'ping'))}\n`);
    await out.raw();
    child.kill('SIGTERM');
    expect(await exit).toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('--ignore-eof keeps running after stdin ends; without it, it exits 0', async () => {
    const stubborn = start(['--ignore-eof']);
    const stubbornExit = exitOf(stubborn.child);
    const plain = start([]);
    const plainExit = exitOf(plain.child);
    stubborn.child.stdin.end();
    plain.child.stdin.end();
    expect(await plainExit).toEqual({ code: 0, signal: null });
    expect(await stillPending(stubbornExit, 300)).toBe('pending');
    stubborn.child.kill('SIGKILL');
    await stubbornExit;
  });

  it('--exit-after 1 --exit-code 3 answers one request, then exits with 3', async () => {
    const { child, out } = start(['--exit-after', '1', '--exit-code', '3']);
    const exit = exitOf(child);
    child.stdin.write(`${JSON.stringify(request(1, 'ping'))}\n${JSON.stringify(request(2, 'ping'))}\n`);
    expect(JSON.parse((await out.raw())!)).toMatchObject({ id: 1 });
    expect(await exit).toEqual({ code: 3, signal: null });
    expect(await out.raw()).toBeUndefined();
  });

  it('--stderr-flood writes that many bytes to stderr, then serves', async () => {
    const { child, out } = start(['--stderr-flood', '300000']);
    const stderr = collect(child.stderr);
    child.stdin.write(`${JSON.stringify(request(1, 'ping'))}\n`);
    expect(JSON.parse((await out.raw())!)).toMatchObject({ id: 1 });
    child.stdin.end();
    expect((await stderr).length).toBe(300_000);
  });

  it('the built package exports the path of the executable, with a shebang', async () => {
    const built = (await import(new URL('../dist/index.js', import.meta.url).href)) as {
      fakeMcpServerBinPath: () => string;
    };
    expect(built.fakeMcpServerBinPath()).toBe(BIN);
    expect(readFileSync(BIN, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });
});

describe('runFakeMcpServer', () => {
  it('serves over the streams it is given and resolves with the exit code', async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const out = new Lines(stdout);
    const done = runFakeMcpServer({ args: ['--noise'], env: { ONLY: '1' }, stdin, stdout, stderr });
    stdin.write(`${JSON.stringify(request(1, 'tools/call', { name: 'get-env', arguments: {} }))}\n`);
    const skipped: string[] = [];
    const reply = await out.json(skipped);
    expect(textOf(reply.result)).toBe('{"ONLY":"1"}');
    expect(skipped).toHaveLength(2);
    stdin.end();
    expect(await done).toBe(0);
  });

  it('resolves with 64 on a bad flag', async () => {
    const stderr = new PassThrough();
    const text = collect(stderr);
    const code = await runFakeMcpServer({
      args: ['--nope'],
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      stderr,
    });
    stderr.end();
    expect(code).toBe(64);
    expect((await text).toString()).toContain('usage: fake-mcp-server');
  });
});
