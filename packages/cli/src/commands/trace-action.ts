import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import {
  createStderrLogger,
  ExitCode,
  escapeControls,
  jsonForTerminal,
  knownSecretHosts,
  readTrace,
  type SessionSummary,
  summarizeTrace,
  type TraceRecord,
  type TraceSummary,
  UsageError,
} from '@mcpsandbox/core';
import { describeFormat, traceFormat, upgradeLegacyTrace } from '../legacy-trace.js';
import type { CliOptions } from '../options.js';
import { reportError } from '../report.js';
import { suggestGrants } from './suggest.js';

export interface TraceFlags {
  json?: boolean;
  follow?: boolean;
  suggest?: boolean;
}

export async function traceAction(path: string, flags: TraceFlags, options: CliOptions): Promise<number> {
  const { io } = options;
  const logger = createStderrLogger({ stream: io.stderr });
  try {
    if (flags.follow) return await follow(path, options);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read trace ${path}: ${(error as Error).message}`, { cause: error });
    }
    if (flags.suggest) return suggest(path, text, options);
    const upgraded = upgradeLegacyTrace(text);
    const format = traceFormat(upgraded);
    const summary = summarizeTrace(upgraded.text);
    if (summary.sessions.length === 0 && summary.malformed > 0) {
      throw new UsageError(`${path} is not an mcp-sandbox trace (no record could be read)`);
    }
    // Tool names, methods and commands in a trace come from the server: escaped on the way out.
    io.stdout.write(
      flags.json
        ? `${jsonForTerminal({ format, ...summary }, 2)}\n`
        : `format: ${describeFormat(format)}\n${escapeControls(formatSummary(summary))}`,
    );
    return ExitCode.ok;
  } catch (error) {
    return reportError(error, logger);
  }
}

function suggest(path: string, text: string, options: CliOptions): number {
  const { records } = readTrace(text);
  if (records.length === 0)
    throw new UsageError(`${path} is not an mcp-sandbox trace (no record could be read)`);
  const { grants, skipped } = suggestGrants(records);
  for (const grant of grants) options.io.stdout.write(`${grant}\n`);
  const logger = createStderrLogger({ stream: options.io.stderr });
  if (skipped > 0)
    logger.warn(`left out ${skipped} refused name(s) that are not valid host names (no flag can grant them)`);
  if (grants.length === 0) logger.info('no refused egress in this trace: nothing to grant');
  return ExitCode.ok;
}

export function formatSummary(summary: TraceSummary): string {
  const out: string[] = [];
  for (const [index, s] of summary.sessions.entries()) {
    if (index > 0) out.push('');
    out.push(...formatSession(s));
  }
  if (summary.sessions.length === 0) out.push('no sessions in this trace');
  if (summary.newerVersion > 0) {
    out.push(
      `note: skipped ${summary.newerVersion} record(s) of a newer trace version; upgrade mcp-sandbox to read them`,
    );
  }
  if (summary.malformed > 0) out.push(`note: skipped ${summary.malformed} damaged line(s)`);
  if (summary.truncatedLast)
    out.push('note: the last line is cut short (the trace is still being written, or the writer died)');
  return `${out.join('\n')}\n`;
}

function formatSession(s: SessionSummary): string[] {
  const ended = s.end
    ? `ended: ${s.end.reason}, exit ${s.end.exitCode ?? '?'}${s.end.serverSignal ? ` (server ${s.end.serverSignal})` : ''}`
    : 'no session-end record (still running, or killed)';
  const lines = [
    `session ${s.sessionId ?? '?'} · backend ${s.backend ?? '?'} (${s.isolation ?? '?'}) · ${seconds(s.durationMs)} · ${ended}`,
    `command: ${s.command.join(' ')}`,
    `protocol: ${protocolText(s.protocol)}`,
    `messages: ${s.messages.clientToServer} to server (${bytes(s.bytes.clientToServer)}), ${s.messages.serverToClient} to client (${bytes(s.bytes.serverToClient)})`,
  ];
  // By count, then by name: messages that race (a notification and a response) print the same way every time.
  const methods = Object.entries(s.methods).sort(
    (a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0),
  );
  if (methods.length > 0) lines.push(`methods: ${methods.map(([m, n]) => `${m} ${n}`).join(', ')}`);
  const tools = Object.entries(s.tools);
  if (tools.length > 0) {
    const width = Math.max(4, ...tools.map(([name]) => name.length));
    lines.push('tools:');
    lines.push(`  ${'name'.padEnd(width)}  calls  errors   p50 ms   p95 ms   max ms`);
    for (const [name, t] of tools.sort((a, b) => b[1].calls - a[1].calls)) {
      lines.push(
        `  ${name.padEnd(width)}  ${String(t.calls).padStart(5)}  ${String(t.errors).padStart(6)}  ${ms(t.p50Ms)}  ${ms(t.p95Ms)}  ${ms(t.maxMs)}`,
      );
    }
  }
  lines.push(
    `errors: ${s.errors} (${s.synthesizedErrors} answered by mcp-sandbox); requests left unanswered: ${s.unanswered}`,
  );
  lines.push(
    `stdout diverted: ${s.diverted} line(s); stderr: ${s.stderr.lines} line(s), ${bytes(s.stderr.bytes)}`,
  );
  for (const p of s.policy) lines.push(`policy: ${p.action} ${p.tool} (${p.rule})`);
  for (const [reason, count] of Object.entries(s.dropped))
    lines.push(`policy: dropped ${count} server message(s): ${reason}`);
  for (const d of s.pinDrift) lines.push(`pin: ${d.tool} ${d.change} since pinned`);
  lines.push(...formatEgress('egress', s.egress));
  // An install that went through is no news; one that was refused or failed explains a server that never started.
  const troubled = Object.values(s.setupEgress).some((e) => e.denied + e.failed > 0);
  if (troubled)
    lines.push(...formatEgress('egress before the server started (install, setup)', s.setupEgress));
  for (const name of s.envHints) {
    const hosts = knownSecretHosts(name);
    const how = hosts
      ? `--secret ${name}@${hosts.join(',')} on backend local, or --env ${name}`
      : `--env ${name}`;
    lines.push(`env: the server asked for ${name}, which was withheld (pass it with ${how})`);
  }
  lines.push(...formatSecrets(s));
  return lines;
}

/** `secrets:` then each bound secret: where its real value went, and where its stand-in did not belong. */
function formatSecrets(s: SessionSummary): string[] {
  const lines: string[] = [];
  const secrets = Object.entries(s.secrets ?? {});
  if (secrets.length > 0) lines.push('secrets (never the value):');
  for (const [name, stats] of secrets) {
    const hosts = Object.entries(stats.substituted);
    const total = hosts.reduce((sum, [, n]) => sum + n, 0);
    lines.push(
      total > 0
        ? `  ${name}: put on the wire in ${total} request(s) to ${hosts.map(([h, n]) => `${h} (${n})`).join(', ')}`
        : `  ${name}: never put on the wire`,
    );
    for (const request of stats.requests) lines.push(`    ${request}`);
    const misuse = Object.entries(stats.misuse);
    if (misuse.length > 0) {
      lines.push(
        `    misuse: the stand-in was sent where it is not replaced: ${misuse.map(([where, n]) => `${where} (${n})`).join(', ')}`,
      );
    }
    if (stats.repliesCut > 0)
      lines.push(`    ${stats.repliesCut} reply(ies) cut off: they carried the real value`);
  }
  for (const [host, t] of Object.entries(s.boundHosts ?? {})) {
    const parts = [
      t.tlsFailed > 0
        ? `${t.tlsFailed} connection(s) did not complete TLS with the session CA (use --env for such a client)`
        : '',
      t.refused > 0 ? `${t.refused} request(s) refused by the strict reader` : '',
      t.repliesCut > 0 ? `${t.repliesCut} reply(ies) cut off (compressed, not searchable)` : '',
    ].filter(Boolean);
    lines.push(`bound host ${host}: ${parts.join('; ')}`);
  }
  return lines;
}

/** `egress:` then one line per host: what the grants let through, refused, and what failed here. */
function formatEgress(title: string, egress: SessionSummary['egress']): string[] {
  const hosts = Object.entries(egress);
  if (hosts.length === 0) return [];
  const width = Math.max(...hosts.map(([host]) => host.length));
  const lines = [`${title}:`];
  for (const [host, e] of hosts) {
    const why = e.reasons.length > 0 ? ` (${e.reasons.join('; ')})` : '';
    lines.push(`  ${host.padEnd(width)}  allowed ${e.allowed}, denied ${e.denied}, failed ${e.failed}${why}`);
  }
  return lines;
}

/** Prints one line per message as the trace grows; stops on SIGINT/SIGTERM. */
async function follow(path: string, options: CliOptions): Promise<number> {
  const { io } = options;
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    throw new UsageError(`cannot read trace ${path}: ${(error as Error).message}`, { cause: error });
  }
  const pending = new Map<string, number>();
  let offset = 0;
  let partial = '';
  const buffer = Buffer.alloc(1 << 16);
  const poll = () => {
    const size = statSync(path).size;
    if (size < offset) offset = 0; // truncated and rewritten
    while (offset < size) {
      const n = readSync(fd, buffer, 0, buffer.length, offset);
      if (n === 0) break;
      offset += n;
      partial += buffer.subarray(0, n).toString();
    }
    const cut = partial.lastIndexOf('\n');
    if (cut === -1) return;
    const { records, newerVersion } = readTrace(upgradeLegacyTrace(partial.slice(0, cut + 1)).text);
    partial = partial.slice(cut + 1);
    for (const record of records) {
      const line = liveLine(record, pending);
      if (line) io.stdout.write(`${escapeControls(line)}\n`);
    }
    if (newerVersion > 0)
      io.stderr.write(`mcp-sandbox: skipped ${newerVersion} record(s) of a newer trace version\n`);
  };
  await new Promise<void>((done) => {
    const timer = setInterval(poll, 100);
    poll();
    const stop = () => {
      clearInterval(timer);
      poll();
      for (const signal of ['SIGINT', 'SIGTERM'] as const) io.signals?.off(signal, stop);
      done();
    };
    for (const signal of ['SIGINT', 'SIGTERM'] as const) io.signals?.on(signal, stop);
  });
  closeSync(fd);
  return ExitCode.ok;
}

/** `12:00:01.123 → tools/call #5 (123 B)`, `← result #5 (456 B) 12.3 ms`, lifecycle events in brackets. */
export function liveLine(record: TraceRecord, pending: Map<string, number>): string | undefined {
  const time = record.ts.slice(11, 23);
  const t = typeof record.t === 'number' ? record.t : Date.parse(record.ts);
  if (record.type !== 'message') {
    if (['stderr', 'sandbox-created', 'process-start'].includes(record.type)) return undefined;
    const detail =
      record.type === 'session-end'
        ? ` ${String(record.reason)}, exit ${String(record.exitCode)}`
        : record.type === 'policy'
          ? ` ${String(record.action)} ${String(record.tool ?? record.reason)}`
          : '';
    return `${time}   [${record.type}${detail}]`;
  }
  const toServer = record.dir === 'client->server';
  const arrow = toServer ? '→' : '←';
  const size = bytes(typeof record.bytes === 'number' ? record.bytes : 0);
  const message = record.message as Record<string, unknown> | undefined;
  if (!message || typeof message !== 'object') return `${time} ${arrow} (not JSON) (${size})`;
  const id = message.id === undefined ? undefined : JSON.stringify(message.id);
  if (typeof message.method === 'string') {
    const params = message.params as { name?: unknown } | undefined;
    const tool = message.method === 'tools/call' && typeof params?.name === 'string' ? ` ${params.name}` : '';
    if (id !== undefined) pending.set(`${record.dir}:${id}`, t);
    return `${time} ${arrow} ${message.method}${tool}${id !== undefined ? ` #${id}` : ''} (${size})`;
  }
  const key = `${toServer ? 'server->client' : 'client->server'}:${id}`;
  const started = pending.get(key);
  pending.delete(key);
  const latency = started === undefined ? '' : ` ${(t - started).toFixed(1)} ms`;
  const kind =
    message.error !== undefined ? `error ${String((message.error as { code?: unknown }).code)}` : 'result';
  return `${time} ${arrow} ${kind} #${id} (${size})${latency}`;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function ms(value: number | null): string {
  return (value === null ? '-' : value.toFixed(1)).padStart(7);
}

function seconds(value: number | null): string {
  return value === null ? '?' : `${(value / 1000).toFixed(2)} s`;
}

function protocolText(protocol: SessionSummary['protocol']): string {
  if (!protocol) return 'unknown (no initialize or server/discover in the trace)';
  const how = protocol.era === 'modern' ? 'server/discover, no initialize' : 'initialize';
  return `${protocol.version ?? '?'} (${how})`;
}
