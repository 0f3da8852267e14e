import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sandbox, SandboxProcess } from '@mcpsandbox/core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createVmBackend, type Isolation } from '../src/index.js';

const HELLO = fileURLToPath(new URL('../examples/hello-app.js', import.meta.url));

/** An SDK client transport over a contract process's stdio. */
class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly stderr: string[] = [];
  constructor(private readonly proc: SandboxProcess) {}
  async start(): Promise<void> {
    void (async () => {
      let buffered = '';
      for await (const chunk of this.proc.stdout) {
        buffered += Buffer.from(chunk).toString('utf8');
        let index = buffered.indexOf('\n');
        while (index >= 0) {
          const line = buffered.slice(0, index);
          buffered = buffered.slice(index + 1);
          if (line.trim() !== '') this.onmessage?.(JSON.parse(line) as JSONRPCMessage);
          index = buffered.indexOf('\n');
        }
      }
      this.onclose?.();
    })();
    void (async () => {
      for await (const chunk of this.proc.stderr) this.stderr.push(Buffer.from(chunk).toString('utf8'));
    })();
  }
  async send(message: JSONRPCMessage): Promise<void> {
    await this.proc.write(Buffer.from(`${JSON.stringify(message)}\n`));
  }
  async close(): Promise<void> {
    await this.proc.closeStdin().catch(() => undefined);
  }
}

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function connect(
  isolation: Isolation,
  command: string[],
  env: Record<string, string> = {},
  ttlMs = 60_000,
) {
  const backend = createVmBackend({ isolation });
  const sandbox = await backend.create({ sessionId: 'mcp-test', env, ttlMs });
  open.push(sandbox);
  const proc = await sandbox.exec(command);
  const transport = new ProcessTransport(proc);
  const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return { client, proc, transport, sandbox };
}

describe.each(['process', 'in-process-trusted'] as const)('vm backend serving MCP (%s)', (isolation) => {
  it('serves the example app to the SDK client: tools, resources, prompts, env as data', async () => {
    const { client, proc, transport } = await connect(isolation, ['node', HELLO], { GREETING: 'Howdy' });
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toEqual(['hello', 'add', 'fail']);
    expect(tools.tools[0]?.inputSchema).toMatchObject({ type: 'object', required: ['name'] });
    expect(await client.callTool({ name: 'hello', arguments: { name: 'Ada' } })).toEqual({
      content: [{ type: 'text', text: 'Howdy, Ada!' }],
    });
    expect(await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } })).toEqual({
      content: [{ type: 'text', text: '42' }],
    });
    const failed = await client.callTool({ name: 'fail', arguments: {} });
    expect(failed).toEqual({ isError: true, content: [{ type: 'text', text: 'this tool always fails' }] });
    const resources = await client.listResources();
    expect(resources.resources).toEqual([
      { uri: 'hello://readme', name: 'readme', description: 'About this app', mimeType: 'text/plain' },
    ]);
    expect((await client.readResource({ uri: 'hello://readme' })).contents[0]).toMatchObject({
      text: 'This app runs in a node:vm sandbox.',
    });
    const prompt = await client.getPrompt({ name: 'greet', arguments: { name: 'Bob' } });
    expect(prompt.messages[0]).toEqual({
      role: 'user',
      content: { type: 'text', text: 'Say hello to Bob.' },
    });
    await client.close();
    expect(await proc.exit).toEqual({ code: 0, signal: null });
    expect(transport.stderr.join('')).toContain('hello-app: registered 3 tools');
  });

  it('exits 1 with a diagnostic when the app does not parse; reports its isolation', async () => {
    const events: unknown[] = [];
    const backend = createVmBackend({ isolation });
    const sandbox = await backend.create({
      sessionId: 'bad',
      env: {},
      ttlMs: 60_000,
      onEvent: (e) => events.push(e),
    });
    open.push(sandbox);
    const file = join(await mkdtemp(join(tmpdir(), 'vm-app-')), 'bad.js');
    await writeFile(file, 'mcp.tool(');
    const proc = await sandbox.exec(['node', file]);
    let stderr = '';
    for await (const chunk of proc.stderr) stderr += Buffer.from(chunk).toString();
    expect(await proc.exit).toEqual({ code: 1, signal: null });
    expect(stderr).toContain('does not parse');
    expect(events[0]).toMatchObject({ type: 'vm-sandbox', isolation });
  });

  it('runs --raw programs and bounds the output an app leaves unread', async () => {
    const backend = createVmBackend({ isolation });
    const sandbox = await backend.create({ sessionId: 'raw', env: {}, ttlMs: 60_000 });
    open.push(sandbox);
    const file = join(await mkdtemp(join(tmpdir(), 'vm-app-')), 'flood.js');
    await writeFile(
      file,
      `let refused = 0;
       const chunk = 'x'.repeat(1_000_000);
       for (let i = 0; i < 100; i++) {
         io.write(chunk).catch(() => { if (refused++ === 0) io.writeErr('refused after ' + i + '\\n'); });
       }
       setInterval(() => {}, 1000);`,
    );
    // Nobody reads stdout: the host must not buffer all 100 MB of it.
    const proc = await sandbox.exec(['--raw', file]);
    let stderr = '';
    for await (const chunk of proc.stderr) {
      stderr += Buffer.from(chunk).toString();
      if (stderr.includes('\n')) break;
    }
    const refusedAfter = Number(/refused after (\d+)/.exec(stderr)?.[1]);
    expect(refusedAfter).toBeGreaterThan(0);
    expect(refusedAfter).toBeLessThanOrEqual(33);
    await proc.kill('SIGKILL');
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('turns a tool that hangs into an error for the client and a crash of the app', async () => {
    const backend = createVmBackend({ isolation, timeoutMs: 300 });
    const sandbox = await backend.create({ sessionId: 'hang', env: {}, ttlMs: 60_000 });
    open.push(sandbox);
    const file = join(await mkdtemp(join(tmpdir(), 'vm-app-')), 'hang.js');
    await writeFile(file, `mcp.tool('spin', 'never returns', { type: 'object' }, () => { for (;;) {} });`);
    const proc = await sandbox.exec([file]);
    const transport = new ProcessTransport(proc);
    const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    const result = await client.callTool({ name: 'spin', arguments: {} }).then(
      (value) => value,
      (error: Error) => ({ rejected: error.message }),
    );
    expect(JSON.stringify(result)).toMatch(/stopped|closed|Connection/i);
    expect(await proc.exit).toEqual({ code: 1, signal: null });
    expect(transport.stderr.join('')).toContain('timeout');
  });
});

/** Serves `source` as an app file (process isolation) to the SDK client. */
async function serveApp(source: string) {
  const file = join(await mkdtemp(join(tmpdir(), 'vm-app-')), 'app.js');
  await writeFile(file, source);
  return connect('process', [file]);
}

describe('the vm backend checks what an app returns before the SDK sees it', () => {
  it('answers a malformed tool result with a short error, not the SDK validation text', async () => {
    // Fails before: the SDK's zod error for 2000 empty content items was megabytes long (a 3 MB
    // result of the same shape took the host to 4.4 GB and killed it).
    const { client } = await serveApp(
      `mcp.tool('bad', 'malformed', { type: 'object' }, () => ({ content: Array.from({ length: 2000 }, () => ({})) }));`,
    );
    const result = await client.callTool({ name: 'bad', arguments: {} }).then(
      (value) => ({ isError: value.isError, text: JSON.stringify(value.content) }),
      (error: Error) => ({ isError: 'rejected', text: error.message }),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toContain('the app returned an invalid result: content[0]');
    expect(result.text.length).toBeLessThan(5000);
  });

  it('rebuilds valid results from known fields only, and caps handler error text', async () => {
    const { client } = await serveApp(`
      mcp.tool('ok', 'fine', { type: 'object' }, () => ({ content: [{ type: 'text', text: 'hi', extra: 'dropped' }] }));
      mcp.tool('throws', 'long error', { type: 'object' }, () => { throw new Error('e'.repeat(100000)); });
      mcp.resource('r://bad', 'bad', 'malformed', () => ({ contents: [{ uri: 'r://bad' }] }));
      mcp.prompt('bad', 'malformed', [], () => ({ messages: [{ role: 'system', content: { type: 'text', text: 'x' } }] }));`);
    expect((await client.callTool({ name: 'ok', arguments: {} })).content).toEqual([
      { type: 'text', text: 'hi' },
    ]);
    const thrown = await client.callTool({ name: 'throws', arguments: {} });
    expect(thrown.isError).toBe(true);
    expect(JSON.stringify(thrown.content).length).toBeLessThan(5000);
    await expect(client.readResource({ uri: 'r://bad' })).rejects.toThrow(
      /invalid result: contents\[0\]: needs a text or blob/,
    );
    await expect(client.getPrompt({ name: 'bad' })).rejects.toThrow(/invalid result: messages\[0\]: role/);
  });

  it('caps registrations with a clear error to the app', async () => {
    // Fails before: no cap (1 MiB descriptions: +900 MB of host heap in 15 s).
    const { client, transport } = await serveApp(`
      let n = 0;
      try { for (; n < 5000; n++) mcp.tool('t' + n, 'd', { type: 'object' }, () => 'x'); }
      catch (e) { console.error('stopped at ' + n + ': ' + e.message); }`);
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(1000);
    expect(transport.stderr.join('')).toContain('stopped at 1000: too many registrations');
  });

  it('caps the size of registrations too', async () => {
    const { client, transport } = await serveApp(`
      const big = 'd'.repeat(1024 * 1024);
      let n = 0;
      try { for (; n < 100; n++) mcp.resource('r://' + n, 'big', big, () => 'x'); }
      catch (e) { console.error('stopped at ' + n + ': ' + e.message); }`);
    expect((await client.listResources()).resources).toHaveLength(3);
    expect(transport.stderr.join('')).toContain(
      'stopped at 3: too many registrations, or their metadata is too large',
    );
  });
});
