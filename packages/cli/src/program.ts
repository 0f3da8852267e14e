import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import {
  BackendVersionError,
  createStderrLogger,
  DEFAULT_MAX_LINE_BYTES,
  DEFAULT_SHUTDOWN_TIMING,
  ExitCode,
  formatDuration,
  isSandboxError,
  type Logger,
  openTraceFile,
  parseDuration,
  resolveEnvAllowlist,
  type StopSignal,
  startBridge,
  UsageError,
} from '@mcpsandbox/core';
import { Command, CommanderError, Option } from 'commander';
import { type BackendRegistry, resolveBackend } from './backends.js';
import { parseAllowNet, parseMount, parseSetting, parseSize } from './parse.js';

export interface SignalSource {
  on(signal: StopSignal, listener: () => void): unknown;
  off(signal: StopSignal, listener: () => void): unknown;
}

/** Everything the program touches of the outside world, injected so that tests can drive it. */
export interface CliIo {
  readonly stdin: Readable;
  /** Protocol only. */
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly signals?: SignalSource;
}

export interface CliOptions {
  readonly backends: BackendRegistry;
  /** The backend used when `--backend` is not given. */
  readonly defaultBackend: string;
  readonly version: string;
  readonly io: CliIo;
}

interface RunFlags {
  backend: string;
  env: string[];
  trace?: string;
  ttl: string;
  setup: string[];
  allowNet: string[];
  mount: string[];
  backendOption: string[];
  template?: string;
  maxMessageSize?: string;
  drainTimeout?: string;
  killGrace?: string;
  quiet?: boolean;
}

const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const collect = (value: string, previous: string[]) => [...previous, value];

/**
 * Runs the program with user arguments (no `node` or script path) and resolves with the exit
 * code. It never calls process.exit: the binary does, once output is flushed.
 */
export async function runCli(args: readonly string[], options: CliOptions): Promise<number> {
  const { io } = options;
  let exitCode: number = ExitCode.ok;
  const program = createProgram(options, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...args], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successes; every other parse failure is a usage error.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    return reportError(error, createStderrLogger({ stream: io.stderr }));
  }
  return exitCode;
}

export function createProgram(options: CliOptions, setExitCode: (code: number) => void): Command {
  const { io, backends } = options;
  const program = new Command('mcp-sandbox')
    .description('Run an MCP server in a sandbox, as a drop-in stdio wrapper.')
    .version(options.version, '-v, --version')
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => write(`mcp-sandbox: ${text.replace(/^error: /, 'error: ')}`),
    })
    .showHelpAfterError('(run "mcp-sandbox run --help" for usage)');

  const backendList = Object.entries(backends)
    .map(([name, entry]) => `  ${name.padEnd(8)} ${entry.summary}`)
    .join('\n');

  program
    .command('run')
    .description('Start <command> in a sandbox and bridge its stdio to this process (JSON-RPC, verbatim).')
    .argument('<command...>', 'the MCP server command and its arguments (put it after --)')
    .passThroughOptions()
    .addOption(
      new Option(
        '-b, --backend <name|module>',
        'backend name, or a path or package exporting createBackend()',
      ).default(options.defaultBackend),
    )
    .option(
      '-e, --env <KEY|KEY=value>',
      'forward KEY from this environment, or set KEY=value (repeatable)',
      collect,
      [],
    )
    .option('--trace <file>', 'append every message and lifecycle event to <file> as JSONL')
    .option('--ttl <duration>', 'hard lifetime of the sandbox: 90s, 10m, 2h', '30m')
    .option(
      '--setup <command>',
      'shell command run in the sandbox before the server (repeatable)',
      collect,
      [],
    )
    .option(
      '--allow-net <host[:port]>',
      'allow egress to host, host:port or *.suffix (repeatable)',
      collect,
      [],
    )
    .option(
      '--mount <host[:inside][:ro|rw]>',
      'make a host path visible inside, read-only by default (repeatable)',
      collect,
      [],
    )
    .option('--template <name>', 'sandbox template (e2b)')
    .option('--backend-option <key=value>', 'a backend-specific setting (repeatable)', collect, [])
    .option(
      '--max-message-size <size>',
      `largest JSON-RPC message either way (default ${DEFAULT_MAX_LINE_BYTES / 2 ** 20}MiB)`,
    )
    .option(
      '--drain-timeout <duration>',
      `after the client closes stdin, how long the server may take to answer what it owes (default ${formatDuration(DEFAULT_SHUTDOWN_TIMING.drainMs)})`,
    )
    .option(
      '--kill-grace <duration>',
      `time between SIGTERM and SIGKILL (default ${formatDuration(DEFAULT_SHUTDOWN_TIMING.killGraceMs)})`,
    )
    .option('-q, --quiet', 'print only warnings and errors on stderr')
    .addHelpText(
      'after',
      `
Backends:
${backendList}

Examples:
  mcp-sandbox run -- npx -y @modelcontextprotocol/server-everything
  mcp-sandbox run --env GITHUB_TOKEN --trace session.jsonl -- npx -y @modelcontextprotocol/server-github
  mcp-sandbox run --backend none --ttl 10m -- node ./my-server.js
  claude mcp add everything -- npx -y mcp-sandbox run -- npx -y @modelcontextprotocol/server-everything

stdout carries only the protocol; everything else goes to stderr.
Exit codes: the server's own; 128+N if it died from signal N; 2 usage error;
124 TTL expired; 125 sandbox failure; 126 cannot execute; 127 command not found.`,
    )
    .action(async (command: string[], flags: RunFlags) => {
      setExitCode(await runAction(command, flags, options));
    });

  return program;
}

async function runAction(command: string[], flags: RunFlags, options: CliOptions): Promise<number> {
  const { io } = options;
  const logger = createStderrLogger({ stream: io.stderr, quiet: flags.quiet ?? false });
  let trace: ReturnType<typeof openTraceFile> | undefined;
  try {
    // Everything the user can get wrong is checked before any sandbox exists.
    const ttlMs = parseDuration(flags.ttl, '--ttl');
    const allow = resolveEnvAllowlist(flags.env, io.env);
    const mounts = flags.mount.map((m) => parseMount(m, io.cwd));
    const allowNet = flags.allowNet.map(parseAllowNet);
    const settings: Record<string, string> = Object.fromEntries(flags.backendOption.map(parseSetting));
    if (flags.template) settings.template = flags.template;
    const maxLineBytes = flags.maxMessageSize
      ? parseSize(flags.maxMessageSize, '--max-message-size')
      : undefined;
    const timing = {
      ...(flags.drainTimeout ? { drainMs: parseDuration(flags.drainTimeout, '--drain-timeout') } : {}),
      ...(flags.killGrace ? { killGraceMs: parseDuration(flags.killGrace, '--kill-grace') } : {}),
    };
    const backend = await resolveBackend(
      flags.backend,
      options.backends,
      { hostEnv: io.env, logger, settings },
      io.cwd,
    );
    if (flags.trace) trace = openTraceFile(resolve(io.cwd, flags.trace), { secrets: allow.secrets });

    const described = backend.describe?.();
    logger.info(`backend ${backend.id}, isolation ${backend.isolation}${described ? `: ${described}` : ''}`);
    if (backend.isolation === 'none') {
      logger.warn('the server is NOT sandboxed: it runs with your user, files and network');
    }
    const secretNote =
      allow.withheldSecretLike.length > 0 ? `, including ${allow.withheldSecretLike.join(', ')}` : '';
    logger.info(
      `env: ${Object.keys(allow.env).length} variable(s) passed in; ${allow.withheld.length} host variable(s) withheld${secretNote}`,
    );

    const session = startBridge({
      backend,
      command,
      setup: flags.setup,
      spec: {
        sessionId: randomUUID(),
        env: allow.env,
        ttlMs,
        mounts,
        ...(allowNet.length > 0 ? { network: { allow: allowNet } } : {}),
      },
      secrets: allow.secrets,
      input: io.stdin,
      output: io.stdout,
      errorOutput: io.stderr,
      logger,
      ...(trace ? { trace } : {}),
      ...(maxLineBytes ? { maxLineBytes } : {}),
      timing,
    });
    const handlers = STOP_SIGNALS.map((signal) => {
      const listener = () => session.stop(signal);
      io.signals?.on(signal, listener);
      return () => io.signals?.off(signal, listener);
    });
    const result = await session.done;
    for (const off of handlers) off();
    logger.debug(`session ended: ${result.reason}, exit code ${result.exitCode}`);
    return result.exitCode;
  } catch (error) {
    return reportError(error, logger);
  } finally {
    trace?.close();
  }
}

/** One actionable line for errors we expect; a stack only for bugs, and only with debug on. */
function reportError(error: unknown, logger: Logger): number {
  if (error instanceof UsageError || error instanceof BackendVersionError) {
    logger.error(error.message);
    return ExitCode.usage;
  }
  if (isSandboxError(error)) {
    logger.error(error.message);
    return ExitCode.sandboxFailure;
  }
  logger.error(
    `unexpected failure: ${(error as Error)?.message ?? String(error)} (set MCP_SANDBOX_DEBUG=1 for details)`,
  );
  logger.debug((error as Error)?.stack ?? '');
  return ExitCode.sandboxFailure;
}
