import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { connect } from './helpers.js';

// Real servers from PyPI, started the way a client starts them: `uvx …` directly, and through
// the built binary. Both speak to the real SDK client with no capabilities.

/** The user's own environment (proxy and TLS trust included), as a client would start either. */
export const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(([, v]) => v !== undefined),
) as Record<string, string>;

export type Call = readonly [name: string, args: Record<string, unknown>];

export interface Session {
  readonly tools: unknown;
  /** Spawn to the tools/list answer. */
  readonly ms: number;
  readonly results: readonly unknown[];
  readonly stderr: string;
}

async function drive(client: Client, started: number, calls: readonly Call[], stderr: () => string) {
  let listed: { tools: unknown; ms: number; results: unknown[] };
  try {
    const { tools } = await client.listTools();
    const ms = performance.now() - started;
    const results: unknown[] = [];
    for (const [name, args] of calls)
      results.push(await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 }));
    listed = { tools, ms, results };
  } finally {
    await client.close();
  }
  // After the close: what the bridge says at the end (denied hosts) is in.
  return { ...listed, stderr: stderr() };
}

/** `uvx <args>` on the host, with its own uv cache and no Python download. */
export async function direct(
  args: readonly string[],
  env: Record<string, string>,
  calls: readonly Call[] = [],
): Promise<Session> {
  const started = performance.now();
  const transport = new StdioClientTransport({
    command: 'uvx',
    args: [...args],
    env: { ...userEnv, UV_PYTHON_DOWNLOADS: 'never', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: 'mcp-sandbox-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return drive(client, started, calls, () => stderr);
}

/** `mcp-sandbox run [runArgs] -- uvx <args>` through the built binary (local). */
export async function sandboxed(
  runArgs: readonly string[],
  args: readonly string[],
  env: Record<string, string>,
  calls: readonly Call[] = [],
): Promise<Session> {
  const started = performance.now();
  const { client, stderr } = await connect([...runArgs, '--', 'uvx', ...args], { ...userEnv, ...env });
  return drive(client, started, calls, stderr);
}

/** The text of a tool result's first content item. */
export function text(result: unknown): string {
  return (result as { content?: Array<{ text?: string }> }).content?.[0]?.text ?? '';
}
