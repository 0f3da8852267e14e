import {
  createStderrLogger,
  ExitCode,
  escapeControls,
  jsonForTerminal,
  type Logger,
  parseDuration,
} from '@mcpsandbox/core';
import { type Attempt, errorText, InspectFailure, openAttempt, worthRetrying } from '../inspect/connect.js';
import { collectReport, formatReport, type ServerReport } from '../inspect/report.js';
import type { CliOptions } from '../options.js';
import { reportError } from '../report.js';
import { SafetyNet } from '../safety-net.js';
import { announce, planRun, type RunFlags } from './run.js';

export interface InspectFlags extends RunFlags {
  json?: boolean;
  timeout: string;
}

/** Exit code of `inspect` when the program ran but did not speak MCP. */
export const NOT_AN_MCP_SERVER = 1;

export async function inspectAction(
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
    const ctx = {
      plan,
      command,
      stderr: io.stderr,
      home: io.env.HOME,
      logger,
      net,
      version: options.version,
      timeoutMs,
      timeoutText: flags.timeout,
    };
    // The v2 client probes with 2026-07-28's `server/discover` and falls back to `initialize` on the
    // same pipe; a server that exits on the probe, or refused `initialize` for 2026-07-28 after a
    // slow start, is opened again in a fresh session in the era it showed.
    let attempt = await openAttempt(ctx, 'auto');
    if (attempt.retry) {
      await attempt.transport.close();
      const first = await attempt.ended;
      if (first.reason === 'bridge-crash') return finishFailed(attempt, first, logger);
      if (worthRetrying(first) || attempt.retry === 'modern') {
        logger.debug(
          `inspect: opening a fresh session (${attempt.retry}) after: ${attempt.failure?.message}`,
        );
        attempt = await openAttempt(ctx, attempt.retry);
      }
    }
    let report: ServerReport | undefined;
    let failure = attempt.failure;
    if (!failure) {
      try {
        report = await collectReport(attempt.client, plan.backend.id, plan.backend.isolation);
      } catch (error) {
        failure = new InspectFailure('listing', `it answered, then ${errorText(error)}`);
      }
    }
    await attempt.transport.close();
    const result = await attempt.ended;
    if (!report) return finishFailed({ ...attempt, ...(failure ? { failure } : {}) }, result, logger);
    // Names and descriptions come from the server: shown with their control characters escaped.
    io.stdout.write(flags.json ? `${jsonForTerminal(report, 2)}\n` : escapeControls(formatReport(report)));
    return ExitCode.ok;
  } catch (error) {
    return reportError(error, logger);
  } finally {
    net.dispose();
  }
}

/** The exit code and the one line for a session that gave no report. */
function finishFailed(attempt: Attempt, result: Awaited<Attempt['ended']>, logger: Logger): number {
  const { failure } = attempt;
  if (result.reason === 'bridge-crash') {
    logger.error(`could not inspect the server: ${failure?.message ?? 'mcp-sandbox failed'}`);
    return result.exitCode;
  }
  // A server that could not start keeps the bridge's code (127 not found, 125 sandbox failure,
  // 124 TTL); a program that ran but did not speak MCP is the user's to fix, with exit 1.
  // The bridge answers a request in flight when the sandbox fails or the TTL fires: that
  // answer is not the program's, so the bridge's exit code stands.
  const bridgeFailed =
    result.exitCode !== ExitCode.ok &&
    (failure?.kind === 'ended' || result.reason === 'sandbox-failure' || result.reason === 'ttl');
  if (bridgeFailed) {
    logger.error(`could not inspect the server: ${failure?.message ?? 'it ended'}`);
    return result.exitCode;
  }
  if (failure?.kind !== 'listing') sayServerEnd(attempt, result, logger);
  logger.error(
    failure?.kind === 'listing'
      ? `could not inspect the server: ${failure.message}`
      : `this program did not answer as an MCP server: ${failure?.message ?? 'it ended'}; ` +
          'check that the command starts an MCP server speaking JSON-RPC on stdio',
  );
  return NOT_AN_MCP_SERVER;
}

/**
 * The program's own end first: how it exited and its last lines on stderr (escaped, as shown
 * above them), so its own error comes before the generic one.
 */
function sayServerEnd(attempt: Attempt, result: Awaited<Attempt['ended']>, logger: Logger): void {
  const status = result.serverStatus;
  // A program stopped by us (silent past --timeout) did not end on its own: nothing to say.
  // A failed exit of its own, even when the client's close raced it (`cat` exits 0 on EOF).
  const onItsOwn =
    attempt.failure?.kind !== 'timeout' &&
    (result.reason === 'server-exit' || (status?.signal === null && status.code !== 0));
  if (!status || !onItsOwn) return;
  const how = status.signal ? `was killed by ${status.signal}` : `exited with code ${status.code}`;
  const lines = attempt.lastLines();
  logger.error(
    lines.length > 0
      ? `the server ${how} before it answered; its last lines on stderr:\n${lines.map((line) => `  ${line}`).join('\n')}`
      : `the server ${how} before it answered, and wrote nothing on stderr`,
  );
}
