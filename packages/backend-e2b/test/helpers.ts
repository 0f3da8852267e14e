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
