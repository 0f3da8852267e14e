import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BIN } from './helpers.js';

/** A stdio server built with the v2 SDK; MCP_ERA=both|modern picks the protocol eras it speaks. */
export const V2_SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));
export const MODERN = '2026-07-28';

/** The 2026-07-28 wire as the v2 client writes it: `server/discover` first, `_meta` on each request. */
export function modernMeta(version = MODERN): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': version,
    'io.modelcontextprotocol/clientInfo': { name: 'raw-test', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
}

export function modernRequest(id: number | string, method: string, params: Record<string, unknown> = {}) {
  return `${JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta() } })}\n`;
}

export interface V2Connected {
  client: Client;
  stderr: () => string;
}

/**
 * The real v2 client. `era` `modern` pins 2026-07-28 (`server/discover`, no `initialize`); `legacy`
 * is the plain 2025-11-25 handshake. `args` is a command line; with `run: true` it is
 * `mcp-sandbox run <args>`.
 */
export async function connectV2(
  command: { run: boolean; args: string[] },
  era: 'modern' | 'legacy',
  env: Record<string, string> = {},
): Promise<V2Connected> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: command.run ? [BIN, 'run', ...command.args] : command.args,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client(
    { name: 'mcp-sandbox-test', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: era === 'modern' ? { pin: MODERN } : 'legacy' } },
  );
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

/** Everything the v2 fixture serves, read through one client. */
export async function surface(client: Client): Promise<Record<string, unknown>> {
  return {
    version: client.getNegotiatedProtocolVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
    tools: await client.listTools(),
    echo: await client.callTool({ name: 'echo', arguments: { text: 'across eras' } }),
    add: await client.callTool({ name: 'add', arguments: { a: 20, b: 22 } }),
    resources: await client.listResources(),
    readme: await client.readResource({ uri: 'fixture://readme' }),
    prompts: await client.listPrompts(),
    prompt: await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } }),
  };
}
