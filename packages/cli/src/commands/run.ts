import { randomUUID } from 'node:crypto';
import { platform as osPlatform } from 'node:os';
import { resolve } from 'node:path';
import {
  createStderrLogger,
  DEFAULT_MAX_LINE_BYTES,
  DEFAULT_SHUTDOWN_TIMING,
  DEFAULT_TTL,
  type EnvAllowlist,
  filePinStore,
  formatDuration,
  ISOLATION_LEVELS,
  type IsolationLevel,
  isolationRank,
  type Logger,
  MIN_REDACTED_LENGTH,
  openTraceFile,
  parseDuration,
  redactLogger,
  resolveEnvAllowlist,
  type SandboxBackend,
  type SandboxSpec,
  SecretSet,
  type ShutdownTiming,
  type StopSignal,
  startBridge,
  ToolPolicy,
  type TraceSink,
  UsageError,
} from '@mcpsandbox/core';
import { Command, Option } from 'commander';
import { type BackendRegistry, type BackendScopedFlag, resolveBackend } from '../backends.js';
import { defaultBackendName, noteDefaultChanged, withE2bFallbackHint } from '../compat.js';
import { WRAP_MARKER } from '../config/marker.js';
import { type CopySummary, checkCopy, formatBytes, parseFs } from '../fs-copy.js';
import { mountHintsFor } from '../mount-hints.js';
import type { CliOptions } from '../options.js';
import { parseAllowNet, parseMount, parseSetting, parseSize } from '../parse.js';
import { reportError } from '../report.js';
import { SafetyNet } from '../safety-net.js';
import { sandboxOutput } from '../sandbox-output.js';
import { WslRequiredError, wslStatus } from '../wsl.js';
import { planSecrets } from './secret-plan.js';

/** The flags shared by every command that starts a server (`run`, `inspect`, `wrap`). */
export interface RunFlags {
  backend: string;
  env: string[];
  /** `--secret NAME@host[,host…][:body]` (repeatable). */
  secret?: string[];
  trace?: string;
  ttl: string;
  setup: string[];
  allowNet: string[];
  /** False with --no-host-tls-trust. */
  hostTlsTrust?: boolean;
  mount: string[];
  fs: string[];
  backendOption: string[];
  template?: string;
  maxMessageSize?: string;
  drainTimeout?: string;
  killGrace?: string;
  allowTool: string[];
  denyTool: string[];
  pinTools?: string;
  pinToolsStrict?: boolean;
  requireIsolation?: string;
  state?: string;
  autoMount?: boolean;
  installAllowNet: string[];
  installEnv: string[];
  /** --project-npmrc: a project .npmrc in the working folder may choose npm's registry and cache. */
  projectNpmrc?: boolean;
  quiet?: boolean;
}

/** Everything a session needs, validated: nothing here has touched a sandbox yet. */
export interface RunPlan {
  readonly backend: SandboxBackend;
  /**
   * Whether the backend substitutes `--secret` values on the wire: one that declares it (the
   * built-in OS backends), never one that merely calls itself `local`.
   */
  readonly substitutesSecrets: boolean;
  readonly allow: EnvAllowlist;
  /**
   * Every secret this process knows, redacted from the trace, stderr and log messages: the
   * `--env` and `--install-env` values; commands add theirs (serve's bearer token).
   */
  readonly secrets: SecretSet;
  readonly spec: Omit<SandboxSpec, 'onEvent'>;
  readonly setup: readonly string[];
  readonly maxLineBytes?: number;
  readonly timing: Partial<ShutdownTiming>;
  readonly policy?: ToolPolicy;
}

const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const collect = (value: string, previous: string[]) => [...previous, value];

export function addRunOptions(command: Command, options: CliOptions): Command {
  return withRunOptions(command, defaultBackendName(options.io.env, options.defaultBackend));
}

function withRunOptions(command: Command, defaultBackend: string): Command {
  return command
    .addOption(
      new Option(
        '-b, --backend <name|module>',
        'backend name, or a path or package exporting createBackend()',
      ).default(defaultBackend),
    )
    .option(
      '-e, --env <KEY|KEY=value>',
      'forward KEY from this environment, or set KEY=value (repeatable)',
      collect,
      [],
    )
    .option(
      '--secret <NAME@host[,host…]>',
      'give the server a stand-in for $NAME; the real value goes on the wire to these hosts only (local; repeatable)',
      collect,
      [],
    )
    .option('--ttl <duration>', 'hard lifetime of the sandbox: 90s, 10m, 2h', DEFAULT_TTL)
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
      '--no-host-tls-trust',
      "do not forward this machine's TLS trust variables (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, …)",
    )
    .option(
      '--mount <host[:inside][:ro|rw]>',
      'make a host path visible inside, read-only by default (repeatable)',
      collect,
      [],
    )
    .option(
      '--fs <path[:to]>',
      'copy a host file or directory in, as a private writable copy (default target /home/user/<name>; repeatable)',
      collect,
      [],
    )
    .option(
      '--install-allow-net <host[:port]>',
      'let the npx install step (only) reach this host too, for packages that download at install (repeatable)',
      collect,
      [],
    )
    .option(
      '--install-env <KEY|KEY=value>',
      'give the npx install step (only, never the server) KEY from this environment, or KEY=value (repeatable)',
      collect,
      [],
    )
    .option(
      '--project-npmrc',
      "let a project .npmrc in this folder (or above) choose npm's registry, cache and TLS settings for npx installs (default: your own npm config only)",
    )
    .option('--template <name>', 'sandbox template (e2b)')
    .option(
      '--state <name>',
      "keep the server's writes (its home, files next to its code) across sessions under <name>",
    )
    .option(
      '--no-auto-mount',
      "do not show the server's own files (a script under a hidden directory) read-only",
    )
    .option('--backend-option <key=value>', 'a backend-specific setting (repeatable)', collect, [])
    .option('--allow-tool <glob>', 'show and allow only tools matching <glob> (repeatable)', collect, [])
    .option('--deny-tool <glob>', 'hide and refuse tools matching <glob> (repeatable)', collect, [])
    .option(
      '--pin-tools <file>',
      'pin the first complete tool listing (written once); warn when a tool changes later',
    )
    .option(
      '--pin-tools-strict',
      'with --pin-tools: hide and refuse tools that changed since they were pinned',
    )
    .addOption(
      new Option('--require-isolation <level>', 'refuse to start on a weaker backend').choices([
        ...ISOLATION_LEVELS,
      ]),
    )
    .option('-q, --quiet', 'print only warnings and errors on stderr');
}

/**
 * Checks everything the user can get wrong, before any sandbox exists. Throws UsageError.
 * `backendGiven`: whether `--backend` was on the command line (not a default).
 */
export async function planRun(
  flags: RunFlags,
  options: CliOptions,
  logger: Logger,
  backendGiven = true,
): Promise<RunPlan> {
  const { io } = options;
  const ttlMs = parseDuration(flags.ttl, '--ttl');
  const serverEnv = resolveEnvAllowlist(flags.env, io.env);
  // The install step's own variables: redacted like --env, passed only through the backend setting.
  const installEnv = resolveEnvAllowlist(flags.installEnv ?? [], io.env, '--install-env');
  const allow = {
    ...serverEnv,
    secrets: [...new Set([...serverEnv.secrets, ...installEnv.secrets])],
    unredacted: [...serverEnv.unredacted, ...installEnv.unredacted],
  };
  const mounts = flags.mount.map((m) => parseMount(m, io.cwd));
  const copies = (flags.fs ?? []).map((text) => ({ text, mount: parseFs(text, io.cwd) }));
  const copied = await Promise.all(copies.map(({ text, mount }) => checkCopy(text, mount)));
  const allowNet = flags.allowNet.map(parseAllowNet);
  const settings: Record<string, string> = Object.fromEntries(flags.backendOption.map(parseSetting));
  if (flags.template) settings.template = flags.template;
  if (flags.state !== undefined) settings.state = flags.state;
  if (flags.autoMount === false) settings.autoMount = 'false';
  if (flags.installAllowNet.length > 0) {
    settings.installAllowNet = flags.installAllowNet.map(parseAllowNet).join(',');
  }
  if (flags.hostTlsTrust === false) settings.hostTlsTrust = 'off';
  if (flags.projectNpmrc === true) settings.projectNpmrc = 'on';
  if (Object.keys(installEnv.env).length > 0) settings.installEnv = JSON.stringify(installEnv.env);
  const maxLineBytes = flags.maxMessageSize
    ? parseSize(flags.maxMessageSize, '--max-message-size')
    : undefined;
  const timing = {
    ...(flags.drainTimeout ? { drainMs: parseDuration(flags.drainTimeout, '--drain-timeout') } : {}),
    ...(flags.killGrace ? { killGraceMs: parseDuration(flags.killGrace, '--kill-grace') } : {}),
  };
  if (flags.pinToolsStrict && !flags.pinTools)
    throw new UsageError('--pin-tools-strict needs --pin-tools <file>');
  const policy = new ToolPolicy({
    allow: flags.allowTool,
    deny: flags.denyTool,
    ...(flags.pinTools
      ? { pins: filePinStore(resolve(io.cwd, flags.pinTools)), strict: flags.pinToolsStrict ?? false }
      : {}),
  });
  noteDefaultChanged(backendGiven, io.env, flags.backend, logger);
  const backend = withE2bFallbackHint(
    await resolveBackend(flags.backend, options.backends, { hostEnv: io.env, logger, settings }, io.cwd),
    io.env,
    logger,
  );
  if (copies.length > 0 && (backend.isolation === 'none' || backend.isolation === 'language')) {
    throw new UsageError(
      `--fs copies files into the sandbox's own filesystem, and backend ${backend.id} has none; use --backend local or e2b, or --mount`,
    );
  }
  for (const [index, { text, mount }] of copies.entries()) {
    const c = copied[index] as CopySummary;
    const links = c.skippedLinks > 0 ? `, ${c.skippedLinks} symlink(s) skipped` : '';
    logger.info(
      `--fs ${text}: ${c.files} file(s), ${formatBytes(c.bytes)} copied to ${mount.sandboxPath}${links}`,
    );
  }
  warnIgnoredFlags(flags, options.backends, logger);
  const required = flags.requireIsolation as IsolationLevel | undefined;
  if (required && isolationRank(backend.isolation) < isolationRank(required)) {
    throw new UsageError(
      `--require-isolation ${required}: backend ${backend.id} gives isolation ${backend.isolation}, which is weaker; ` +
        `choose one with ${required} isolation or stronger (${strongerThan(required)})`,
    );
  }
  const substitutes = backend.substitutesSecrets === true;
  const bound = planSecrets(
    flags.secret ?? [],
    io.env,
    { name: flags.backend, substitutes },
    allowNet,
    Object.keys(allow.env),
  );
  const env = { ...allow.env };
  for (const secret of bound) env[secret.name] = secret.standIn;
  // A bound variable is not withheld: the server has its stand-in (no --env hint for it).
  const boundNames = new Set(bound.map((secret) => secret.name));
  const withheld = allow.withheld.filter((name) => !boundNames.has(name));
  return {
    backend,
    substitutesSecrets: substitutes,
    allow: {
      ...allow,
      withheld,
      withheldSecretLike: allow.withheldSecretLike.filter((name) => !boundNames.has(name)),
    },
    secrets: new SecretSet([...allow.secrets, ...bound.map((secret) => secret.value)]),
    setup: flags.setup,
    spec: {
      sessionId: randomUUID(),
      env,
      ttlMs,
      mounts: [...mounts, ...copies.map((c) => c.mount)],
      ...(allowNet.length > 0
        ? { network: { allow: allowNet, ...(bound.length > 0 ? { secrets: bound } : {}) } }
        : {}),
    },
    ...(maxLineBytes ? { maxLineBytes } : {}),
    timing,
    ...(policy.active ? { policy } : {}),
  };
}

/** A flag the chosen backend has no use for is said to be ignored, never dropped in silence. */
function warnIgnoredFlags(flags: RunFlags, registry: BackendRegistry, logger: Logger): void {
  const entry = Object.hasOwn(registry, flags.backend) ? registry[flags.backend] : undefined;
  const given: Record<BackendScopedFlag, boolean> = {
    '--template': flags.template !== undefined,
    '--state': flags.state !== undefined,
    '--mount': flags.mount.length > 0,
    '--allow-net': flags.allowNet.length > 0,
    '--no-host-tls-trust': flags.hostTlsTrust === false,
    '--project-npmrc': flags.projectNpmrc === true,
  };
  for (const flag of entry?.ignores ?? []) {
    if (!given[flag]) continue;
    const users = Object.entries(registry)
      .filter(([, other]) => !other.ignores?.includes(flag))
      .map(([name]) => name);
    logger.warn(
      `${flag} does not apply to backend ${flags.backend}: ignored` +
        (users.length > 0 ? ` (it applies to: ${users.join(', ')})` : ''),
    );
  }
}

function strongerThan(level: IsolationLevel): string {
  const names: Record<IsolationLevel, string> = { microvm: 'e2b', os: 'local', language: 'vm', none: 'none' };
  return ISOLATION_LEVELS.filter((l) => isolationRank(l) >= isolationRank(level))
    .map((l) => names[l])
    .reverse()
    .join(', ');
}

/** The start-up lines: which backend and isolation, and what of the environment crossed. */
export function announce(plan: RunPlan, logger: Logger): void {
  const { backend, allow } = plan;
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
  for (const secret of plan.spec.network?.secrets ?? []) {
    logger.info(
      `secret ${secret.name}: the server holds a stand-in; the real value goes only to ${secret.hosts.join(', ')} (request line and credential headers${secret.body ? ', and bodies' : ''})`,
    );
  }
  if (allow.unredacted.length > 0) {
    logger.warn(
      `${allow.unredacted.join(', ')}: value shorter than ${MIN_REDACTED_LENGTH} characters, so it is not redacted from the trace and stderr (a value that short would match everywhere)`,
    );
  }
}

export function registerRunCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  const backendList = Object.entries(options.backends)
    .map(([name, entry]) => `  ${name.padEnd(8)} ${entry.summary}`)
    .join('\n');
  const run = program
    .command('run')
    .description('Start <command> in a sandbox and bridge its stdio to this process (JSON-RPC, verbatim).')
    .argument('<command...>', 'the MCP server command and its arguments (put it after --)')
    .passThroughOptions();
  withRunOnlyOptions(addRunOptions(run, options))
    .addHelpText(
      'after',
      `
Backends:
${backendList}

Examples:
  mcp-sandbox run -- npx -y @modelcontextprotocol/server-everything
  mcp-sandbox run --env GITHUB_PERSONAL_ACCESS_TOKEN --allow-net api.github.com --trace session.jsonl -- npx -y @modelcontextprotocol/server-github
  mcp-sandbox run --backend none --ttl 10m -- node ./my-server.js
  claude mcp add everything -- mcp-sandbox run -- npx -y @modelcontextprotocol/server-everything

stdout carries only the protocol; everything else goes to stderr.
Exit codes: the server's own; 128+N if it died from signal N; 2 usage error;
124 TTL expired; 125 sandbox failure; 126 cannot execute; 127 command not found.`,
    )
    .action(async (command: string[], flags: RunFlags, cmd: Command) => {
      setExitCode(await runAction(command, flags, options, cmd.getOptionValueSource('backend') === 'cli'));
    });
}

/** The options only `run` has, beyond those it shares with `inspect` and `wrap`. */
function withRunOnlyOptions(command: Command): Command {
  return (
    command
      .option('--trace <file>', 'append every message and lifecycle event to <file> as JSONL')
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
      // wrap's marker for entries whose launcher has a name of the user's choosing; no effect here.
      .addOption(new Option(WRAP_MARKER, 'marks an entry written by mcp-sandbox wrap').hideHelp())
  );
}

/** The words after `run` in a config entry, split and read exactly as `run` reads them. */
export interface RunWords {
  readonly flags: RunFlags;
  /** Whether `--backend` was among the words (else the default applies). */
  readonly backendGiven: boolean;
  /** Each option among the words: its attribute name in `flags` and its long flag. */
  readonly given: readonly { readonly key: string; readonly flag: string }[];
  /** The server's command line. */
  readonly command: readonly string[];
}

/** The attribute names of every option `run` has (for the judge of config entries, and its test). */
export function runOptionKeys(): string[] {
  return runParser().options.map((option) => option.attributeName());
}

function runParser(): Command {
  return withRunOnlyOptions(
    withRunOptions(new Command('run').argument('<command...>').passThroughOptions(), ''),
  )
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} });
}

/**
 * Parses the words after `run` with run's own options (commander, as the program does), never
 * printing or exiting: a word run would refuse is an error here too, with commander's message.
 */
export function parseRunWords(words: readonly string[]): RunWords {
  const parser = runParser();
  let command: string[] = [];
  parser.action((given: string[]) => {
    command = given;
  });
  try {
    parser.parse([...words], { from: 'user' });
  } catch (error) {
    const message = (error as Error).message.replace(/^error: /, '');
    throw new UsageError(message, { cause: error });
  }
  const given = parser.options
    .map((option) => ({ key: option.attributeName(), flag: option.long ?? option.short ?? '' }))
    .filter(({ key }) => parser.getOptionValueSource(key) === 'cli');
  return {
    flags: parser.opts<RunFlags>(),
    backendGiven: parser.getOptionValueSource('backend') === 'cli',
    given,
    command,
  };
}

async function runAction(
  command: string[],
  flags: RunFlags,
  options: CliOptions,
  backendGiven: boolean,
): Promise<number> {
  const { io } = options;
  let logger = createStderrLogger({ stream: io.stderr, quiet: flags.quiet ?? false });
  const net = new SafetyNet(io.faults, logger);
  let trace: TraceSink | undefined;
  try {
    await refuseLocalOnWindows(command, flags, options);
    const plan = await net.guard(planRun(flags, options, logger, backendGiven));
    // From here on a message may quote the server (an error it caused): secrets redacted.
    logger = redactLogger(logger, plan.secrets.redact);
    if (flags.trace) trace = openTraceFile(resolve(io.cwd, flags.trace), { secrets: plan.secrets });
    announce(plan, logger);
    const session = startBridge({
      backend: plan.backend,
      command,
      setup: plan.setup,
      spec: plan.spec,
      secrets: plan.secrets,
      withheldEnv: plan.allow.withheld,
      secretHints: plan.substitutesSecrets,
      mountHints: mountHintsFor(command, plan.spec.mounts ?? [], plan.backend.isolation, io.env.HOME),
      input: io.stdin,
      output: io.stdout,
      errorOutput: sandboxOutput(io.stderr),
      logger,
      ...(trace ? { trace } : {}),
      ...(plan.maxLineBytes ? { maxLineBytes: plan.maxLineBytes } : {}),
      timing: plan.timing,
      ...(plan.policy ? { policy: plan.policy } : {}),
    });
    net.attach(session);
    const handlers = STOP_SIGNALS.map((signal) => {
      const listener = () => session.stop(signal);
      io.signals?.on(signal, listener);
      return () => io.signals?.off(signal, listener);
    });
    const result = await net.result(session);
    for (const off of handlers) off();
    logger.debug(`session ended: ${result.reason}, exit code ${result.exitCode}`);
    return result.exitCode;
  } catch (error) {
    return reportError(error, logger);
  } finally {
    trace?.close();
    net.dispose();
  }
}

/** On Windows, `local` is bubblewrap inside WSL2: say exactly how to start this server there. */
async function refuseLocalOnWindows(command: readonly string[], flags: RunFlags, options: CliOptions) {
  if ((options.platform ?? osPlatform()) !== 'win32' || flags.backend !== 'local') return;
  const list =
    options.wslList ??
    (async () => {
      const { createSystemDoctorHost } = await import('../doctor/system.js');
      return createSystemDoctorHost({ env: options.io.env, platform: 'win32' }).exec('wsl.exe', ['-l', '-v']);
    });
  throw new WslRequiredError(command, wslStatus(await list()));
}
