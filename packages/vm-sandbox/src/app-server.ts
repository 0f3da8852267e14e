import type { Readable, Writable } from 'node:stream';
import {
  type CallToolResult,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  Server,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Tool,
} from '@modelcontextprotocol/server';
import { type StdioServerHandle, StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { parseUntrusted } from './copy.js';
import { capText, InvalidResultError, toPromptResult, toResourceResult, toToolResult } from './results.js';

/** The 2026-07-28 revision: `server/discover`, no handshake, `_meta` on each request. */
export const MODERN_REVISION = '2026-07-28';

const LIMITS = { maxBytes: 4 * 1024 * 1024, maxDepth: 64 };

/** What an app registered through `mcp.tool`, `mcp.resource` and `mcp.prompt`, as the host parsed it. */
export interface Registered {
  readonly tools: Map<string, { name: string; description?: string; inputSchema: Record<string, unknown> }>;
  readonly resources: Map<string, { uri: string; name: string; description?: string; mimeType?: string }>;
  readonly prompts: Map<string, { name: string; description?: string; arguments?: unknown[] }>;
}

export function emptyRegistry(): Registered {
  return { tools: new Map(), resources: new Map(), prompts: new Map() };
}

/** Runs a handler inside the sandbox and resolves with what it returned. */
export type Invoke = (kind: 'tool' | 'resource' | 'prompt', name: string, args: unknown) => Promise<unknown>;

/**
 * Records one registration the app sent. The text is the sandbox's: parsed within limits, and only
 * the fields the protocol names are kept, each of its type.
 */
export function register(registered: Registered, kind: string, metaJson: string): void {
  let meta: Record<string, unknown>;
  try {
    meta = parseUntrusted(metaJson, LIMITS) as Record<string, unknown>;
  } catch {
    return;
  }
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const description = text(meta.description);
  if (kind === 'tool' && typeof meta.name === 'string') {
    const schema = meta.inputSchema;
    const inputSchema =
      schema !== null && typeof schema === 'object' && (schema as { type?: unknown }).type === 'object'
        ? { ...(schema as Record<string, unknown>) }
        : { type: 'object' };
    registered.tools.set(meta.name, {
      name: meta.name,
      ...(description ? { description } : {}),
      inputSchema,
    });
  } else if (kind === 'resource' && typeof meta.uri === 'string') {
    const mimeType = text(meta.mimeType);
    registered.resources.set(meta.uri, {
      uri: meta.uri,
      name: text(meta.name) ?? meta.uri,
      ...(description ? { description } : {}),
      ...(mimeType ? { mimeType } : {}),
    });
  } else if (kind === 'prompt' && typeof meta.name === 'string') {
    const args = Array.isArray(meta.arguments)
      ? meta.arguments.map((a) => ({ ...(a as object) }))
      : undefined;
    registered.prompts.set(meta.name, {
      name: meta.name,
      ...(description ? { description } : {}),
      ...(args ? { arguments: args } : {}),
    });
  }
}

/**
 * Serves an app's surface over `stdin`/`stdout` in both protocol eras: the opening message picks
 * one (2025's `initialize`, or 2026-07-28's `server/discover` and `_meta` on each request), and one
 * server instance is kept for the connection. It runs on the host, outside the app's context.
 */
export function serveApp(
  registered: Registered,
  invoke: Invoke,
  stdin: Readable,
  stdout: Writable,
): StdioServerHandle {
  return serveStdio(() => buildServer(registered, invoke), {
    legacy: 'serve',
    transport: new StdioServerTransport(stdin, stdout),
  });
}

function buildServer(registered: Registered, invoke: Invoke): Server {
  const { tools, resources, prompts } = registered;
  const server = new Server(
    { name: 'mcp-sandbox-vm-app', version: '0.0.0' },
    {
      capabilities: { tools: {}, resources: {}, prompts: {} },
      supportedProtocolVersions: [MODERN_REVISION, ...SUPPORTED_PROTOCOL_VERSIONS],
    },
  );
  // The casts are of values the host rebuilt field by field (register, results.ts).
  server.setRequestHandler('tools/list', async () => ({ tools: [...tools.values()] as Tool[] }));
  server.setRequestHandler('tools/call', async (request) => {
    const { name, arguments: args } = request.params;
    if (!tools.has(name))
      return { isError: true, content: [{ type: 'text', text: capText(`unknown tool: ${name}`) }] };
    try {
      return toToolResult(await invoke('tool', name, args ?? {})) as CallToolResult;
    } catch (error) {
      return { isError: true, content: [{ type: 'text', text: errorText(error) }] };
    }
  });
  server.setRequestHandler('resources/list', async () => ({ resources: [...resources.values()] }));
  server.setRequestHandler('resources/read', async (request) => {
    const { uri } = request.params;
    const resource = resources.get(uri);
    if (resource === undefined) throw new Error(capText(`unknown resource: ${uri}`));
    try {
      return toResourceResult(await invoke('resource', uri, { uri }), resource) as ReadResourceResult;
    } catch (error) {
      throw new Error(errorText(error));
    }
  });
  server.setRequestHandler('prompts/list', async () => ({ prompts: [...prompts.values()] as Prompt[] }));
  server.setRequestHandler('prompts/get', async (request) => {
    const { name, arguments: args } = request.params;
    if (!prompts.has(name)) throw new Error(capText(`unknown prompt: ${name}`));
    try {
      return toPromptResult(await invoke('prompt', name, args ?? {})) as GetPromptResult;
    } catch (error) {
      throw new Error(errorText(error));
    }
  });
  return server;
}

/** The text of an error for the client: an invalid result says so; every text is capped. */
function errorText(error: unknown): string {
  const message = error instanceof Error ? error.message : 'the handler failed';
  return capText(
    error instanceof InvalidResultError ? `the app returned an invalid result: ${message}` : message,
  );
}
