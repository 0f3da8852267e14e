import { DEFAULT_MAX_LINE_BYTES } from '@mcpsandbox/core';
import type { Command } from 'commander';
import type { CliOptions } from '../options.js';
import { DEFAULT_MAX_CONNECTIONS, MCP_PATH } from '../serve/endpoint.js';
import { addRunOptions } from './run.js';
import type { ServeFlags } from './serve-action.js';

export const DEFAULT_SERVE_PORT = 8931;

export function registerServeCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  const serve = program
    .command('serve')
    .description(
      'Expose a sandboxed stdio MCP server over Streamable HTTP on 127.0.0.1, behind a bearer token.',
    )
    .argument('<command...>', 'the MCP server command and its arguments (put it after --)')
    .passThroughOptions();
  addRunOptions(serve, options)
    .option('--port <n>', 'TCP port on 127.0.0.1 (0 picks a free one)', String(DEFAULT_SERVE_PORT))
    .option(
      '--token-file <file>',
      'read the bearer token from <file> (else one is generated and printed once)',
    )
    .option('--max-sessions <n>', 'most sessions open at once (each its own sandbox, unless --shared)', '16')
    .option(
      '--max-connections <n>',
      'most HTTP connections open at once; past it a new one is closed as it comes in',
      String(DEFAULT_MAX_CONNECTIONS),
    )
    .option(
      '--shared',
      'one sandbox for every session: each client sees what the others left in the server (see below)',
    )
    .option('--trace <file>', 'append every message and lifecycle event of every session to <file> as JSONL')
    .option(
      '--max-message-size <size>',
      `largest JSON-RPC message either way, and largest request body (default ${DEFAULT_MAX_LINE_BYTES / 2 ** 20}MiB)`,
    )
    .addHelpText(
      'after',
      `
Each client session (protocol 2025-11-25 and earlier) gets a sandbox of its own, so one client
cannot see another's server state; --ttl, --trace, the tool policy and --require-isolation apply
to each. Stateless requests (2026-07-28) share one long-lived sandbox. SSE events carry ids: a
client that reconnects with Last-Event-ID gets what it missed (the last 1000 events or 8MiB of a
session; further behind, a 409 error). Every refused request closes its connection; a request's
head must arrive within 10s and all of it within 15s; a keep-alive connection idle for 5s closes. The
endpoint is http://127.0.0.1:<port>${MCP_PATH}.

--shared runs ONE sandbox for all sessions. Its risks: whatever one client stores in the server
(files, memory, a login) every other client can read or change, and the server's notifications
reach every session. The server sees one client: the first initialize is forwarded and later
sessions are answered from its result (the one place serve answers for the server); ids and
progress tokens are rewritten so sessions never collide; sampling, elicitation and roots requests
go only to the session they provably belong to (the request they name, else the only session with
a request in flight); otherwise the server gets an error that says why, never a guess.

Examples:
  mcp-sandbox serve --port 8931 --token-file ~/.config/mcp-token -- npx -y @modelcontextprotocol/server-everything
  claude mcp add --transport http everything http://127.0.0.1:8931${MCP_PATH} --header "Authorization: Bearer $(cat ~/.config/mcp-token)"`,
    )
    .action(async (command: string[], flags: ServeFlags, cmd: Command) => {
      // The sessions, the replay buffers and the HTTP server load with serve, not with every start.
      const { serveAction } = await import('./serve-action.js');
      setExitCode(await serveAction(command, flags, options, cmd.getOptionValueSource('backend') === 'cli'));
    });
}
