import { createE2BBackend, type E2BBackendOptions } from '../src/index.js';
import { FAKE_API_KEY, type FakeE2B } from '../src/testing/index.js';

/** A backend pointed at the fake through the SDK's configurable API and sandbox URLs. */
export function fakeBackend(fake: FakeE2B, options: E2BBackendOptions = {}) {
  return createE2BBackend({
    hostEnv: { E2B_API_KEY: FAKE_API_KEY },
    apiUrl: fake.apiUrl,
    sandboxUrl: fake.sandboxUrl,
    requestTimeoutMs: 10_000,
    ...options,
  });
}

export async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { JsonlTrace, type SandboxBackend, silentLogger, startBridge } from '@mcpsandbox/core';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export const SERVER_EVERYTHING = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

/**
 * Runs core's real bridge over in-memory pipes: `clientIn` is what a client writes, `clientOut`
 * what it reads. The trace is kept in memory.
 */
export function bridgeSession(
  backend: SandboxBackend,
  command: readonly string[],
  spec: {
    env?: Record<string, string>;
    ttlMs?: number;
    network?: { allow: string[] };
    setup?: string[];
  } = {},
) {
  const clientIn = new PassThrough();
  const clientOut = new PassThrough();
  const errorOutput = new PassThrough();
  const stderr: Buffer[] = [];
  errorOutput.on('data', (chunk: Buffer) => stderr.push(chunk));
  const traceText: string[] = [];
  const trace = new JsonlTrace(
    (text) => traceText.push(text),
    () => {},
  );
  const session = startBridge({
    backend,
    command,
    ...(spec.setup ? { setup: spec.setup } : {}),
    spec: {
      sessionId: `test-${Date.now()}`,
      env: spec.env ?? {},
      ttlMs: spec.ttlMs ?? 120_000,
      ...(spec.network ? { network: spec.network } : {}),
    },
    input: clientIn,
    output: clientOut,
    errorOutput,
    logger: silentLogger,
    trace,
    timing: { drainMs: 5_000, exitGraceMs: 500, killGraceMs: 1_000 },
  });
  return {
    session,
    clientIn,
    clientOut,
    stderr: () => Buffer.concat(stderr).toString(),
    trace: () => {
      trace.flush();
      return traceText
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
  };
}

/** The smallest MCP transport over a pair of streams: one JSON-RPC message per line. */
export class LineTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly #input: NodeJS.ReadableStream;
  readonly #output: NodeJS.WritableStream;
  #buffer = '';

  constructor(input: NodeJS.ReadableStream, output: NodeJS.WritableStream) {
    this.#input = input;
    this.#output = output;
  }

  async start(): Promise<void> {
    this.#input.on('data', (chunk: Buffer) => {
      this.#buffer += chunk.toString();
      for (let i = this.#buffer.indexOf('\n'); i >= 0; i = this.#buffer.indexOf('\n')) {
        const line = this.#buffer.slice(0, i);
        this.#buffer = this.#buffer.slice(i + 1);
        if (line.trim()) this.onmessage?.(JSON.parse(line) as JSONRPCMessage);
      }
    });
    this.#input.on('end', () => this.onclose?.());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.#output.write(`${JSON.stringify(message)}\n`);
  }

  async close(): Promise<void> {
    this.#output.end();
  }
}

export interface ChildScenario {
  /** Commands run to the end first (output discarded), e.g. to plant files in the VM. */
  readonly setup?: readonly (readonly string[])[];
  /** The process under attack. */
  readonly argv: readonly string[];
  /** What the host does to it once started. */
  readonly action?: 'sigterm' | 'write';
  /** How long to wait for it to end before giving up. */
  readonly waitMs?: number;
  /** Commands run after it ended; their stdout is reported. */
  readonly after?: readonly (readonly string[])[];
}

export interface ChildReport {
  readonly status: { code: number | null; signal: string | null; error?: string } | 'timeout';
  readonly action?: string;
  readonly stdoutBytes: number;
  /** What the `after` commands printed. */
  readonly after?: string;
  /** Peak resident set of the host process (VmHWM), in MiB. */
  readonly peakMiB: number;
}

/**
 * Runs the built backend in a separate Node process against the fake and reports the peak RSS
 * of that process (the bridge's side), so a test can bound what the VM side makes the host hold.
 */
export async function runInChild(fake: FakeE2B, scenario: ChildScenario): Promise<ChildReport> {
  const { spawn } = await import('node:child_process');
  const script = `
    import { readFileSync } from 'node:fs';
    import { createE2BBackend } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
    const scenario = JSON.parse(process.env.SCENARIO);
    const sleep = (ms, value) => new Promise((resolve) => setTimeout(() => resolve(value), ms));
    let stdoutBytes = 0;
    const drain = async (stream, count) => { for await (const chunk of stream) if (count) stdoutBytes += chunk.length; };
    const backend = createE2BBackend({
      apiKey: process.env.KEY, apiUrl: process.env.FAKE_API, sandboxUrl: process.env.FAKE_ENVD, requestTimeoutMs: 10000,
    });
    const box = await backend.create({ sessionId: 'rss', env: {}, ttlMs: 120000 });
    const report = {};
    try {
      for (const step of scenario.setup ?? []) {
        const proc = await box.exec(step);
        await Promise.all([drain(proc.stdout), drain(proc.stderr), proc.exit]);
      }
      const proc = await box.exec(scenario.argv);
      void drain(proc.stdout, true).catch(() => {});
      void drain(proc.stderr).catch(() => {});
      await sleep(300);
      if (scenario.action === 'sigterm') report.action = await proc.kill('SIGTERM').then(() => 'ok', (e) => e.code ?? String(e));
      if (scenario.action === 'write') report.action = await proc.write(Buffer.from('x\\n')).then(() => 'ok', (e) => e.code ?? String(e));
      const status = await Promise.race([proc.exit, sleep(scenario.waitMs ?? 15000, 'timeout')]);
      report.status = status === 'timeout' ? status : { code: status.code, signal: status.signal, ...(status.error ? { error: status.error.code } : {}) };
      report.after = '';
      for (const step of scenario.after ?? []) {
        const proc = await box.exec(step);
        const chunks = [];
        await Promise.all([(async () => { for await (const chunk of proc.stdout) chunks.push(chunk); })(), drain(proc.stderr), proc.exit]);
        report.after += Buffer.concat(chunks).toString();
      }
    } finally {
      report.stdoutBytes = stdoutBytes;
      const hwm = /VmHWM:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
      report.peakMiB = Math.round(Number(hwm[1]) / 1024);
      process.stdout.write(JSON.stringify(report) + '\\n');
      await Promise.race([box.close(), sleep(5000)]);
      process.exit(0);
    }
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: {
      PATH: process.env.PATH ?? '',
      KEY: FAKE_API_KEY,
      FAKE_API: fake.apiUrl,
      FAKE_ENVD: fake.sandboxUrl,
      SCENARIO: JSON.stringify(scenario),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (c, s) => resolve([c, s])),
  );
  const line = Buffer.concat(out).toString().trim().split('\n').pop() ?? '';
  if (!line.startsWith('{')) {
    throw new Error(
      `the host process died (code ${code}, signal ${signal}): ${Buffer.concat(err).toString().slice(-2000)}`,
    );
  }
  return JSON.parse(line) as ChildReport;
}
