import { PassThrough } from 'node:stream';
import {
  createStderrLogger,
  ExitCode,
  escapeControls,
  type FrameHandler,
  jsonForTerminal,
  LineFramer,
  parseDuration,
  startBridge,
} from '@mcpsandbox/core';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Command } from 'commander';
import type { CliOptions } from '../options.js';
import { reportError } from '../report.js';
import { SafetyNet } from '../safety-net.js';
import { sandboxOutput } from '../sandbox-output.js';
import { addRunOptions, announce, planRun, type RunFlags } from './run.js';

interface InspectFlags extends RunFlags {
  json?: boolean;
  timeout: string;
}

/** Exit code of `inspect` when the program ran but did not speak MCP. */
export const NOT_AN_MCP_SERVER = 1;

/** What `inspect` learned of a server. */
export interface ServerReport {
  server: { name: string; version: string; title?: string } | null;
  protocolVersion: string | null;
  capabilities: Record<string, unknown>;
  instructions: string | null;
  tools: Array<{ name: string; description: string; required: string[] }>;
  resources: Array<{ uri: string; name: string; mimeType: string | null }>;
  resourceTemplates: Array<{ uriTemplate: string; name: string }>;
  prompts: Array<{ name: string; description: string; arguments: string[] }>;
  isolation: string;
  backend: string;
}

export function registerInspectCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  const inspect = program
    .command('inspect')
    .description(
      'Start a server as `run` would, list what it offers (tools, resources, prompts), then stop it.',
    )
    .argument('<command...>', 'the MCP server command and its arguments (put it after --)')
    .passThroughOptions();
  addRunOptions(inspect, options)
    .option('--json', 'print the report as JSON')
    .option(
      '--timeout <duration>',
      'how long the server may take to answer initialize, counted from its start (after any install)',
      '30s',
    )
    .addHelpText(
      'after',
      '\nExample:\n  mcp-sandbox inspect -- npx -y @modelcontextprotocol/server-everything',
    )
    .action(async (command: string[], flags: InspectFlags, cmd: Command) => {
      setExitCode(
        await inspectAction(command, flags, options, cmd.getOptionValueSource('backend') === 'cli'),
      );
    });
}

async function inspectAction(
  command: string[],
  flags: InspectFlags,
  options: CliOptions,
  backendGiven: boolean,
): Promise<number> {
  const { io } = options;
  const logger = createStderrLogger({ stream: io.stderr, quiet: flags.quiet ?? false });
  const net = new SafetyNet(io.faults, logger);
  try {
    const timeoutMs = parseDuration(flags.timeout, '--timeout');
    const plan = await net.guard(planRun(flags, options, logger, backendGiven));
    announce(plan, logger);
    // The same bridge as `run`, with the SDK client on the other end of two in-memory pipes.
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    const session = startBridge({
      backend: plan.backend,
      command,
      setup: plan.setup,
      spec: plan.spec,
      secrets: plan.allow.secrets,
      input: toServer,
      output: toClient,
      errorOutput: sandboxOutput(io.stderr),
      logger,
      // Nothing is owed once the report is in; when it is not, a silent program need not be waited for.
      timing: { ...plan.timing, exitGraceMs: 200, drainMs: 1000 },
      ...(plan.policy ? { policy: plan.policy } : {}),
    });
    net.attach(session);
    const transport = new PipeTransport(toServer, toClient);
    // The SDK client is loaded only here: `run`, the hot path, never pays for it.
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client(
      { name: 'mcp-sandbox-inspect', version: options.version },
      { capabilities: {} },
    );
    let serverGone = false;
    const ended = net.result(session).then((result) => {
      serverGone = true;
      transport.onclose?.();
      return result;
    });
    let report: ServerReport | undefined;
    let failure: InspectFailure | undefined;
    // --timeout is the server's: it starts once the server runs, after the sandbox's setup and
    // any first install (which may take longer than a server may to answer).
    const limit = startTimer(timeoutMs, session.started);
    try {
      await Promise.race([
        client.connect(transport),
        ended.then(() => Promise.reject(new InspectFailure('ended', 'it ended before answering initialize'))),
        limit.expired.then(() =>
          Promise.reject(
            new InspectFailure('timeout', `no answer to initialize within ${flags.timeout} (--timeout)`),
          ),
        ),
      ]);
    } catch (error) {
      // The SDK rejects with "Not connected" when the session ends first: say that it ended.
      failure =
        error instanceof InspectFailure
          ? error
          : serverGone
            ? new InspectFailure('ended', 'it ended before answering initialize')
            : new InspectFailure('protocol', errorText(error));
    } finally {
      limit.cancel();
    }
    if (!failure) {
      try {
        report = await collectReport(client, transport, plan.backend.id, plan.backend.isolation);
      } catch (error) {
        failure = new InspectFailure('listing', `it answered initialize, then ${errorText(error)}`);
      }
    }
    await transport.close();
    const result = await ended;
    if (result.reason === 'bridge-crash') {
      logger.error(`could not inspect the server: ${failure?.message ?? 'mcp-sandbox failed'}`);
      return result.exitCode;
    }
    if (!report) {
      // A server that could not start keeps the bridge's code (127 not found, 125 sandbox failure,
      // 124 TTL); a program that ran but did not speak MCP is the user's to fix, with exit 1.
      // The bridge answers an initialize in flight when the sandbox fails or the TTL fires: that
      // answer is not the program's, so the bridge's exit code stands.
      const bridgeFailed =
        result.exitCode !== ExitCode.ok &&
        (failure?.kind === 'ended' || result.reason === 'sandbox-failure' || result.reason === 'ttl');
      if (bridgeFailed) {
        logger.error(`could not inspect the server: ${failure?.message ?? 'it ended'}`);
        return result.exitCode;
      }
      logger.error(
        failure?.kind === 'listing'
          ? `could not inspect the server: ${failure.message}`
          : `this program did not answer as an MCP server: ${failure?.message ?? 'it ended'}; ` +
              'check that the command starts an MCP server speaking JSON-RPC on stdio',
      );
      return NOT_AN_MCP_SERVER;
    }
    // Names and descriptions come from the server: shown with their control characters escaped.
    io.stdout.write(flags.json ? `${jsonForTerminal(report, 2)}\n` : escapeControls(formatReport(report)));
    return ExitCode.ok;
  } catch (error) {
    return reportError(error, logger);
  } finally {
    net.dispose();
  }
}

/** Why `inspect` got no report: the program ended, stayed silent, or answered something else. */
class InspectFailure extends Error {
  readonly kind: 'ended' | 'timeout' | 'protocol' | 'listing';
  constructor(kind: InspectFailure['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function startTimer(ms: number, after: Promise<unknown>): { expired: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  const expired = new Promise<void>((resolve) => {
    void after.then(() => {
      if (cancelled) return;
      timer = setTimeout(resolve, ms);
      timer.unref();
    });
  });
  return {
    expired,
    cancel: () => {
      cancelled = true;
      clearTimeout(timer);
    },
  };
}

async function collectReport(
  client: Client,
  transport: PipeTransport,
  backend: string,
  isolation: string,
): Promise<ServerReport> {
  const capabilities = (client.getServerCapabilities() ?? {}) as Record<string, unknown>;
  const info = client.getServerVersion();
  const report: ServerReport = {
    server: info
      ? { name: info.name, version: info.version, ...(info.title ? { title: info.title } : {}) }
      : null,
    protocolVersion: transport.protocolVersion ?? null,
    capabilities,
    instructions: client.getInstructions() ?? null,
    tools: [],
    resources: [],
    resourceTemplates: [],
    prompts: [],
    backend,
    isolation,
  };
  if (capabilities.tools) {
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      for (const tool of page.tools) {
        const required = (tool.inputSchema as { required?: unknown }).required;
        report.tools.push({
          name: tool.name,
          description: firstLine(tool.description),
          required: Array.isArray(required) ? required.map(String) : [],
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
  }
  if (capabilities.resources) {
    let cursor: string | undefined;
    do {
      const page = await client.listResources(cursor ? { cursor } : {});
      for (const r of page.resources)
        report.resources.push({ uri: r.uri, name: r.name, mimeType: r.mimeType ?? null });
      cursor = page.nextCursor;
    } while (cursor);
    const templates = await client.listResourceTemplates().catch(() => ({ resourceTemplates: [] }));
    for (const t of templates.resourceTemplates)
      report.resourceTemplates.push({ uriTemplate: t.uriTemplate, name: t.name });
  }
  if (capabilities.prompts) {
    let cursor: string | undefined;
    do {
      const page = await client.listPrompts(cursor ? { cursor } : {});
      for (const p of page.prompts) {
        report.prompts.push({
          name: p.name,
          description: firstLine(p.description),
          arguments: (p.arguments ?? []).map((a) => (a.required ? `${a.name}*` : a.name)),
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
  }
  return report;
}

export function formatReport(report: ServerReport): string {
  const lines: string[] = [];
  const server = report.server ? `${report.server.name} ${report.server.version}` : 'unnamed server';
  lines.push(
    `${server} · protocol ${report.protocolVersion ?? '?'} · backend ${report.backend} (${report.isolation})`,
  );
  lines.push(`capabilities: ${Object.keys(report.capabilities).sort().join(', ') || 'none'}`);
  // Instructions are often markdown: show their first line of prose, not a heading.
  const instructions = report.instructions?.split('\n').find((l) => l.trim() && !l.trim().startsWith('#'));
  if (instructions) lines.push(`instructions: ${firstLine(instructions)}`);
  lines.push('', `tools (${report.tools.length})`);
  lines.push(
    ...table(
      ['name', 'required', 'description'],
      report.tools.map((t) => [t.name, t.required.join(', ') || '-', t.description]),
    ),
  );
  if (report.resources.length > 0 || report.resourceTemplates.length > 0) {
    lines.push('', `resources (${report.resources.length}, ${report.resourceTemplates.length} template(s))`);
    lines.push(
      ...table(
        ['name', 'uri', 'type'],
        [
          ...report.resources.map((r) => [r.name, r.uri, r.mimeType ?? '-']),
          ...report.resourceTemplates.map((t) => [t.name, t.uriTemplate, 'template']),
        ],
      ),
    );
  }
  if (report.prompts.length > 0) {
    lines.push('', `prompts (${report.prompts.length})`);
    lines.push(
      ...table(
        ['name', 'arguments', 'description'],
        report.prompts.map((p) => [p.name, p.arguments.join(', ') || '-', p.description]),
      ),
    );
  }
  return `${lines.join('\n')}\n`;
}

function table(header: string[], rows: string[][]): string[] {
  if (rows.length === 0) return ['  (none)'];
  const widths = header.map((h, i) =>
    Math.min(40, Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length))),
  );
  const cell = (text: string, i: number) => {
    const w = widths[i] as number;
    const fitted = text.length > w && i < header.length - 1 ? `${text.slice(0, w - 1)}…` : text;
    return i < header.length - 1 ? fitted.padEnd(w) : fitted;
  };
  return [header, ...rows].map((row) => `  ${row.map(cell).join('  ')}`.trimEnd());
}

function firstLine(text: string | undefined): string {
  const line = (text ?? '').trim().split('\n')[0] ?? '';
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}

/** An SDK transport over the bridge's in-memory pipes, framed by core's line framer. */
class PipeTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  protocolVersion: string | undefined;
  readonly #out: PassThrough;
  readonly #in: PassThrough;
  #closed = false;

  constructor(out: PassThrough, input: PassThrough) {
    this.#out = out;
    this.#in = input;
  }

  async start(): Promise<void> {
    const framer = new LineFramer();
    const handler: FrameHandler = {
      line: (line) => {
        try {
          this.onmessage?.(JSON.parse(line.toString()) as JSONRPCMessage);
        } catch (error) {
          this.onerror?.(error as Error);
        }
      },
      oversize: () => this.onerror?.(new Error('oversize message from the server')),
    };
    this.#in.on('data', (chunk: Buffer) => framer.push(chunk, handler));
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!this.#closed) this.#out.write(`${JSON.stringify(message)}\n`);
  }

  setProtocolVersion(version: string): void {
    this.protocolVersion = version;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#out.end();
  }
}
