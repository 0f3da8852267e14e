/**
 * Process mode: every budget is enforced by the host (the parent), whatever the worker sends.
 * Two kinds of attacker: an app inside an honest worker, and a compromised worker (code that
 * escaped into the child's realm), modelled by a launcher that starts a program writing its
 * own protocol lines. Each test failed before the parent enforced the budget (see comments).
 */
import { describe, expect, it } from 'vitest';
import { type LaunchedProcess, MCPAppSandbox } from '../src/index.js';
import { spawnChild } from '../src/process-session.js';
import type { EngineEvent } from '../src/runtime.js';
import type { InternalSandboxOptions } from '../src/sandbox.js';

/** A launcher that ignores the sandbox's argv and runs `source` as the "worker". */
const compromised = (source: string) => (): Promise<LaunchedProcess> =>
  spawnChild([process.execPath, '-e', source]);

interface Recorded {
  readonly logs: string[];
  readonly errors: string[];
  readonly engine: EngineEvent[];
  readonly result: Awaited<ReturnType<MCPAppSandbox['run']>>;
}

async function record(
  options: InternalSandboxOptions,
  setup?: (s: MCPAppSandbox) => void,
): Promise<Recorded> {
  const engine: EngineEvent[] = [];
  const sandbox = new MCPAppSandbox({
    ...options,
    onEngineEvent: (event) => engine.push(event),
  } as InternalSandboxOptions);
  setup?.(sandbox);
  const logs: string[] = [];
  const errors: string[] = [];
  sandbox.on('log', (entry) => logs.push(entry.message));
  sandbox.on('error', (error) => errors.push(error.message));
  const result = await sandbox.run();
  await sandbox.dispose();
  return { logs, errors, engine, result };
}

describe('log and error budgets count events and bytes', () => {
  it('empty console.log() calls are not free', async () => {
    // Fails before: maxLogBytes counted text length only, so 6.9 M empty lines passed in 3 s.
    const run = await record({
      code: `const end = Date.now() + 1500; while (Date.now() < end) console.log(); console.log('done');`,
      timeout: 5000,
    });
    expect(run.result).toEqual({ status: 'finished' });
    expect(run.logs.length).toBeLessThanOrEqual(10_001);
    expect(run.logs.at(-1)).toMatch(/log limit reached/);
  });

  it('error events (timer exceptions, unhandled rejections) have a budget', async () => {
    // Fails before: every error crossed, 300 MB in 3 s.
    const run = await record({
      code: `
        for (let i = 0; i < 5000; i++) setTimeout(() => { throw new Error('x'.repeat(5000)); }, 0);
        for (let i = 0; i < 5000; i++) Promise.reject(new Error('y'.repeat(5000)));`,
      timeout: 5000,
    });
    expect(run.errors.length).toBeGreaterThan(10);
    expect(run.errors.length).toBeLessThanOrEqual(1001);
    expect(run.errors.reduce((n, m) => n + m.length, 0)).toBeLessThanOrEqual(1024 * 1024 + 200);
  });

  it('a compromised worker cannot exceed the log budget: the parent stops it', async () => {
    // Fails before: only the child counted; the parent passed on every line it was sent.
    const run = await record({
      code: '',
      launcher: compromised(`
        const line = JSON.stringify({ t: 'log', level: 'log', text: 'flood' }) + '\\n';
        const write = () => { while (process.stdout.write(line.repeat(1000))); process.stdout.once('drain', write); };
        write();`),
    });
    expect(run.logs.length).toBeLessThanOrEqual(10_001);
    expect(run.result).toMatchObject({ status: 'crashed', crash: { reason: 'protocol' } });
  });
});

describe('the parent validates what the worker may send', () => {
  it('a compromised worker cannot repeat the log-limit notice (a log line outside the budget)', async () => {
    const run = await record({
      code: '',
      launcher: compromised(`
        const line = JSON.stringify({ t: 'log-limit' }) + '\\n';
        process.stdout.write(line.repeat(100000));
        setInterval(() => {}, 1000);`),
    });
    expect(run.logs.length).toBeLessThanOrEqual(1);
    expect(run.result).toMatchObject({ status: 'crashed', crash: { reason: 'protocol' } });
  });

  it('an mcp app worker cannot send `out` (raw bytes for the MCP stream)', async () => {
    // Fails before: the event reached the backend, which wrote the chunk to the client's stdout.
    const forged = JSON.stringify({
      t: 'out',
      id: 1,
      fd: 1,
      chunk: '{"jsonrpc":"2.0","id":1,"result":{"forged":true}}\n',
    });
    const run = await record({
      code: '',
      api: 'mcp',
      stayAlive: true,
      launcher: compromised(
        `process.stdout.write(${JSON.stringify(`${forged}\n`)}); setInterval(() => {}, 1000);`,
      ),
    });
    expect(run.engine.filter((event) => event.t === 'out')).toEqual([]);
    expect(run.result).toMatchObject({ status: 'crashed', crash: { reason: 'protocol' } });
  });

  it('a worker cannot call a host function that was not exposed', async () => {
    let calls = 0;
    const run = await record(
      {
        code: '',
        launcher: compromised(
          `process.stdout.write(JSON.stringify({ t: 'call', id: 1, name: 'secret', args: '[]' }) + '\\n'); setInterval(() => {}, 1000);`,
        ),
      },
      (sandbox) => sandbox.expose('open', () => calls++),
    );
    expect(calls).toBe(0);
    expect(run.result).toMatchObject({ status: 'crashed', crash: { reason: 'protocol' } });
  });
});

describe('calls in flight are capped', () => {
  it('an app cannot pile up calls to a slow host function', async () => {
    // Fails before: no cap (a slow host function: +1.1–1.4 GB of host heap in 20 s).
    let started = 0;
    const run = await record(
      {
        code: `
          let refused = 0;
          for (let i = 0; i < 5000; i++) slow('x'.repeat(1000)).catch((e) => { refused++; if (refused === 1) console.log(e.message); });
          await new Promise((resolve) => setTimeout(resolve, 300));
          console.log('refused ' + refused);`,
        timeout: 5000,
      },
      (sandbox) =>
        sandbox.expose('slow', () => {
          started++;
          return new Promise((resolve) => setTimeout(resolve, 1000));
        }),
    );
    expect(started).toBeLessThanOrEqual(64);
    expect(run.logs[0]).toMatch(/too many calls in flight \(64, or 16777216 bytes of arguments\)/);
    expect(run.logs[1]).toBe(`refused ${5000 - started}`);
  });

  it('nor pile up their arguments: 16 MiB of them in flight at most', async () => {
    let started = 0;
    const run = await record(
      {
        code: `
          const big = 'x'.repeat(3 * 1024 * 1024);
          let refused = 0;
          for (let i = 0; i < 20; i++) slow(big).catch(() => { refused++; });
          await new Promise((resolve) => setTimeout(resolve, 300));
          console.log('refused ' + refused);`,
        timeout: 5000,
      },
      (sandbox) =>
        sandbox.expose('slow', () => {
          started++;
          return new Promise((resolve) => setTimeout(resolve, 1000));
        }),
    );
    expect(started).toBe(5);
    expect(run.logs).toEqual(['refused 15']);
  });

  it('a compromised worker cannot pile them up either', async () => {
    let started = 0;
    const run = await record(
      {
        code: '',
        launcher: compromised(`
          for (let id = 1; id <= 1000; id++) process.stdout.write(JSON.stringify({ t: 'call', id, name: 'slow', args: '[]' }) + '\\n');
          setInterval(() => {}, 1000);`),
      },
      (sandbox) =>
        sandbox.expose('slow', () => {
          started++;
          return new Promise(() => {});
        }),
    );
    expect(started).toBeLessThanOrEqual(64);
    expect(run.result).toMatchObject({ status: 'crashed', crash: { reason: 'protocol' } });
  });
});

describe('line reassembly in the parent is linear', () => {
  it('a 20 MiB line costs the host little CPU', async () => {
    // Fails before: each 64 KiB chunk was appended to a string searched from offset 0 (quadratic);
    // a 20 MiB line cost the host seconds of CPU.
    const before = process.cpuUsage();
    const run = await record({
      code: '',
      timeout: 30_000,
      launcher: compromised(`
        const chunk = 'x'.repeat(65536);
        let left = 320;
        const write = () => { while (left > 0) { left--; if (!process.stdout.write(chunk)) return process.stdout.once('drain', write); } process.stdout.write('\\n'); setTimeout(() => process.exit(0), 100); };
        write();`),
    });
    const used = process.cpuUsage(before);
    console.error('host CPU for the line (ms):', (used.user + used.system) / 1000);
    expect(run.result).toMatchObject({ status: 'crashed', crash: { reason: 'exited' } });
    expect((used.user + used.system) / 1000).toBeLessThan(1000);
  });
});

describe("the host's memory under a flood of calls", () => {
  it('stays bounded: the host program peaks under 300 MiB while an app floods a slow function', async () => {
    // Fails before: no cap, the calls kept starting (105 in 4 s here, each holding 20,000 parsed
    // objects on the host, growing with time; the issue measured +1.1–1.4 GB of host heap in
    // 20 s). Now 64 at most; the peak is the stated bound. The host program gets 1 GiB of heap.
    const { spawn } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const app = `
      const args = new Array(20000).fill({});
      let told = false;
      for (let i = 0; ; i++) {
        slow(args).catch((e) => { if (!told) { told = true; console.log(e.message); } });
        if (i % 16 === 0) await new Promise((resolve) => setTimeout(resolve, 0));
      }`;
    const child = spawn(
      process.execPath,
      [
        '--max-old-space-size=1024',
        fileURLToPath(new URL('./fixtures/slow-host.mjs', import.meta.url)),
        app,
        '20000',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const code = await new Promise((resolve) => child.once('exit', resolve));
    const report = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as {
      started?: number;
      logs?: string[];
      peakMb?: number;
    };
    console.error(
      `host peak RSS under the call flood: ${report.peakMb?.toFixed(0)} MiB, calls started: ${report.started}`,
    );
    expect(code).toBe(0);
    expect(report.logs?.[0]).toMatch(/too many calls in flight/);
    expect(report.started).toBe(64);
    expect(report.peakMb).toBeLessThan(300);
  }, 30_000);
});
