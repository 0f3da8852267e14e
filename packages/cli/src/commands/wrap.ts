import { access, constants } from 'node:fs/promises';
import { platform as osPlatform } from 'node:os';
import { isAbsolute, posix, resolve, win32 } from 'node:path';
import {
  createStderrLogger,
  escapeControls,
  jsonForTerminal,
  type Logger,
  parseDuration,
  UsageError,
} from '@mcpsandbox/core';
import { type Command, Option } from 'commander';
import {
  CLIENT_IDS,
  CLIENTS,
  type ClientId,
  type ConfigLocation,
  explicitConfig,
  isClientId,
  type LocateContext,
  locateConfig,
} from '../config/clients.js';
import type { WrapCommand } from '../config/edit.js';
import { ConfigFileError } from '../config/files.js';
import {
  type ChangePlan,
  displayPath,
  type LoadedConfig,
  loadConfig,
  planUnwrap,
  planWrap,
  requireConfig,
  selectServers,
  writePlan,
} from '../config/operations.js';
import { pathMountsFor } from '../config/path-mounts.js';
import { parseWrapped, type ServerEntry, WRAP_MARKER } from '../config/servers.js';
import { parseFs } from '../fs-copy.js';
import type { CliOptions } from '../options.js';
import { parseAllowNet, parseMount, parseSetting } from '../parse.js';
import { reportError } from '../report.js';
import { addRunOptions, type RunFlags } from './run.js';

/** Exit code when a config file is invalid, missing, or changed under us: nothing was written. */
export const CONFIG_ERROR_EXIT = 1;

interface TargetFlags {
  client?: string;
  project?: boolean;
  config?: string;
  server: string[];
  all?: boolean;
  dryRun?: boolean;
}

interface WrapFlags extends RunFlags, TargetFlags {
  launcher: string;
  rw?: boolean;
  update?: boolean;
  keepState?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

function locateContext(options: CliOptions): LocateContext {
  // The OS decides where clients keep their configs; tests point HOME and friends at temp dirs.
  return { platform: osPlatform(), env: options.io.env, cwd: options.io.cwd };
}

function addTargetOptions(command: Command, required: boolean): Command {
  const client = new Option('--client <client>', `the MCP client: ${CLIENT_IDS.join(', ')}`).choices(
    CLIENT_IDS,
  );
  if (required) client.makeOptionMandatory();
  return command
    .addOption(client)
    .option('--project', "the client's project config in the current directory instead of the user one")
    .option('--config <file>', "edit this file (in the client's format) instead of the usual location");
}

function addSelectionOptions(command: Command): Command {
  return command
    .option('--server <name>', 'an entry to change (repeatable)', collect, [])
    .option('--all', 'every entry')
    .option('--dry-run', 'print the diff and stop: nothing is written');
}

function resolveLocation(flags: TargetFlags, options: CliOptions): ConfigLocation {
  const client = flags.client as ClientId;
  const ctx = locateContext(options);
  if (flags.config) return explicitConfig(client, resolve(options.io.cwd, flags.config), ctx);
  try {
    return locateConfig(client, flags.project ?? false, ctx);
  } catch (error) {
    throw new UsageError((error as Error).message, { cause: error });
  }
}

function selection(flags: TargetFlags, servers: readonly ServerEntry[], verb: string): ServerEntry[] {
  if (!flags.all && flags.server.length === 0) {
    const names = servers.map((s) => s.name).join(', ') || '(none)';
    throw new UsageError(
      `say which servers to ${verb}: --server <name> (repeatable) or --all; configured: ${names}`,
    );
  }
  const { chosen, missing } = selectServers(servers, flags.all ? 'all' : flags.server);
  if (missing.length > 0) {
    const names = servers.map((s) => s.name).join(', ') || '(none)';
    throw new UsageError(`no server named ${missing.join(', ')} in this config; configured: ${names}`);
  }
  return chosen;
}

/** What starts mcp-sandbox in the client's config. */
export async function resolveLauncher(
  launcher: string,
  version: string,
  ctx: LocateContext,
): Promise<readonly string[]> {
  if (launcher === 'npx') return ['npx', '-y', `mcp-sandbox@${version}`];
  if (launcher === 'path') {
    const found = await findOnPath('mcp-sandbox', ctx);
    if (!found) {
      throw new UsageError(
        '--launcher path: no mcp-sandbox on PATH; install it (npm install -g mcp-sandbox) or give its path',
      );
    }
    return [found];
  }
  // Any executable: a global install, a local build's dist/bin.js. The client starts it from a
  // folder of its own, so the entry gets the absolute path.
  const path = ctx.platform === 'win32' ? win32 : posix;
  const file = path.isAbsolute(launcher) ? launcher : path.resolve(ctx.cwd, launcher);
  try {
    await access(file, ctx.platform === 'win32' ? constants.F_OK : constants.X_OK);
  } catch {
    throw new UsageError(
      `--launcher ${launcher}: ${file} is not an executable file; give npx, path, or the path of an mcp-sandbox binary`,
    );
  }
  return [file];
}

/** Launchers not known by name get the marker after `run`, so that ls and unwrap find the entry. */
export function markerFor(launcher: readonly string[]): readonly string[] {
  const [command = '', ...args] = launcher;
  return parseWrapped(command, [...args, 'run', '--', 'server']) ? [] : [WRAP_MARKER];
}

async function findOnPath(name: string, ctx: LocateContext): Promise<string | undefined> {
  const win = ctx.platform === 'win32';
  const path = win ? win32 : posix;
  const dirs = (ctx.env.PATH ?? ctx.env.Path ?? '')
    .split(win ? win32.delimiter : posix.delimiter)
    .filter(Boolean);
  const exts = win ? (ctx.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext.toLowerCase());
      try {
        await access(candidate, win ? constants.F_OK : constants.X_OK);
        return path.isAbsolute(candidate) ? candidate : resolve(ctx.cwd, candidate);
      } catch {
        // next
      }
    }
  }
  return undefined;
}

/** wrap's own options; every other option it has is one of run's and goes into the entries. */
const OWN_OPTIONS = new Set([
  'client',
  'project',
  'config',
  'server',
  'all',
  'dryRun',
  'launcher',
  'rw',
  'update',
  'keepState',
]);

/**
 * run's options as the user gave them to `wrap`, in run's order, validated and made independent
 * of this directory (the client starts the server from a folder of its own). Options left at
 * their defaults are left out, so that the entry follows run's defaults. Options run gains later
 * are forwarded as they are.
 */
export function runArgsFromFlags(command: Command, flags: RunFlags, options: CliOptions): string[] {
  const values = flags as unknown as Record<string, unknown>;
  const out: string[] = [];
  for (const option of command.options) {
    const key = option.attributeName();
    if (OWN_OPTIONS.has(key) || command.getOptionValueSource(key) !== 'cli') continue;
    const flag = option.long ?? option.short;
    const value = values[key];
    if (!flag || value === undefined || value === false) continue;
    if (value === true) {
      out.push(flag);
      continue;
    }
    for (const item of Array.isArray(value) ? (value as unknown[]) : [value]) {
      out.push(flag, runValue(key, String(item), options));
    }
  }
  return out;
}

function runValue(key: string, value: string, options: CliOptions): string {
  const { cwd } = options.io;
  switch (key) {
    case 'backend': {
      const isPath = value.startsWith('.') || isAbsolute(value);
      if (
        !isPath &&
        !value.startsWith('@') &&
        !/[/\\]/.test(value) &&
        !Object.hasOwn(options.backends, value)
      ) {
        throw new UsageError(
          `--backend ${value}: no such backend (built in: ${Object.keys(options.backends).join(', ')})`,
        );
      }
      return isPath ? resolve(cwd, value) : value;
    }
    case 'env':
      if (value.includes('=')) {
        throw new UsageError(
          `--env ${value.slice(0, value.indexOf('='))}=…: wrap never writes values into arguments; put the variable in the entry's "env" block (each key there is forwarded) or pass --env KEY`,
        );
      }
      return value;
    case 'ttl':
      parseDuration(value, '--ttl');
      return value;
    case 'allowNet':
      return parseAllowNet(value);
    case 'mount': {
      const spec = parseMount(value, cwd);
      return `${spec.hostPath}:${spec.sandboxPath}:${spec.mode}`;
    }
    case 'fs': {
      const spec = parseFs(value, cwd);
      return `${spec.hostPath}:${spec.sandboxPath}`;
    }
    case 'backendOption':
      parseSetting(value);
      return value;
    case 'pinTools':
      return resolve(cwd, value);
    default:
      return value;
  }
}

/**
 * The entry's env keys become `--env KEY`: the values stay in the client's env block. Host paths
 * its arguments name become `--mount path` when `mounts` is set (see `pathMountsFor`), unless the
 * user's own `--mount` already shows that path.
 */
export function wrapCommandFor(
  entry: ServerEntry,
  launcher: readonly string[],
  runArgs: readonly string[],
  mounts?: { rw: boolean },
  keepState = false,
): WrapCommand {
  const given = new Set<string>();
  const mounted = new Set<string>();
  for (let i = 0; i < runArgs.length; i++) {
    if (runArgs[i] === '--env') given.add(runArgs[i + 1] as string);
    if (runArgs[i] === '--mount') mounted.add((runArgs[i + 1] as string).split(':')[0] as string);
  }
  const stateName = keepState && !runArgs.includes('--state') ? stateNameFor(entry.name) : undefined;
  const state = stateName ? ['--state', stateName] : [];
  const fromBlock = entry.envKeys.filter((k) => !given.has(k)).flatMap((k) => ['--env', k]);
  const server = entry.wrapped ? entry.wrapped.server : [entry.command ?? '', ...entry.args];
  const fromPaths = mounts
    ? pathMountsFor(server, { rw: mounts.rw })
        .filter((m) => !mounted.has(m.path))
        .flatMap((m) => ['--mount', `${m.path}:${m.path}:${m.mode}`])
    : [];
  return { launcher, runArgs: [...runArgs, ...state, ...fromPaths, ...fromBlock] };
}

/** The entry's name as a state name: what run --state accepts, or nothing. */
export function stateNameFor(entryName: string): string | undefined {
  const name = entryName
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return name === '' ? undefined : name;
}

function report(plan: ChangePlan, logger: Logger): void {
  for (const o of plan.outcomes) {
    const line = `${o.name}: ${o.action}${o.note ? ` (${o.note})` : ''}`;
    if (o.action === 'skipped') logger.info(`${line}, left alone`);
    else logger.info(line);
  }
}

async function applyPlan(
  plan: ChangePlan,
  flags: TargetFlags,
  options: CliOptions,
  logger: Logger,
  done: string,
): Promise<number> {
  const { io } = options;
  const changed = plan.outcomes.filter((o) => o.action !== 'skipped').length;
  if (plan.newText === plan.config.text) {
    logger.info(`nothing to change in ${plan.config.location.file}`);
    return 0;
  }
  io.stderr.write(escapeControls(plan.diff));
  if (flags.dryRun) {
    logger.info(`dry run: ${changed} server(s) would be ${done}; nothing written`);
    return 0;
  }
  const { backup } = await writePlan(plan, new Date());
  logger.info(`${changed} server(s) ${done} in ${plan.config.target}; backup: ${backup}`);
  logger.info(`restart ${CLIENTS[plan.config.location.client].name} (or reload its MCP servers) to apply`);
  return 0;
}

function handle(error: unknown, logger: Logger): number {
  if (error instanceof ConfigFileError) {
    logger.error(`${error.message}${error.code === 'E_CONFIG_MISSING' ? '' : '; the file was not changed'}`);
    return CONFIG_ERROR_EXIT;
  }
  return reportError(error, logger);
}

export function registerWrapCommands(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  const clients = CLIENT_IDS.map((id) => `${id} (${CLIENTS[id].name})`).join(', ');
  const wrap = program
    .command('wrap')
    .description(
      "Sandbox servers in an MCP client's own config: each entry starts `mcp-sandbox run … -- <its command>`.",
    );
  addSelectionOptions(addTargetOptions(wrap, true))
    .addOption(
      new Option(
        '--launcher <npx|path|file>',
        'how the client starts mcp-sandbox: npx (npx -y mcp-sandbox@<this version>), path (the mcp-sandbox on PATH, as an absolute path), or the path of an mcp-sandbox executable',
      ).default('npx'),
    )
    .option(
      '--rw',
      'mount the host paths an entry names read-write (default: read-only, but for known writers)',
    )
    .option('--update', 'wrap already wrapped entries anew, with the options given now')
    .option(
      '--keep-state',
      "keep each entry's writes across sessions, under its own name (run --state <name>)",
    );
  addRunOptions(wrap, options).addHelpText(
    'after',
    `
Clients: ${clients}.
Each chosen stdio entry keeps its name, position and other fields; its "env" keys become --env KEY
(values stay in the env block), and each host path its arguments name that exists here becomes a
--mount at the same path (read-only unless --rw or the server is a known writer such as
server-filesystem); with --keep-state its writes are kept across sessions (--state <entry name>). Remote (URL) entries are left alone, and so are already sandboxed ones unless
--update is given: then their run options are replaced by the ones given now.
A diff goes to stderr, a timestamped backup is written next to the file, then the file is replaced
atomically. Undo with mcp-sandbox unwrap.

Examples:
  mcp-sandbox wrap --client claude-desktop --all --dry-run
  mcp-sandbox wrap --client cursor --project --server github --backend local --allow-net api.github.com`,
  );
  wrap.action(async (flags: WrapFlags, command: Command) => {
    const logger = createStderrLogger({ stream: options.io.stderr, quiet: flags.quiet ?? false });
    try {
      const location = resolveLocation(flags, options);
      const runArgs = runArgsFromFlags(command, flags, options);
      const launcher = await resolveLauncher(flags.launcher, options.version, locateContext(options));
      const config = await requireConfig(location);
      const chosen = selection(flags, config.servers, 'wrap');
      // Paths an entry names are carried across as mounts, and its writes are kept under its
      // name, where the backend applies mounts and state at all.
      const ignored = Object.hasOwn(options.backends, flags.backend)
        ? (options.backends[flags.backend]?.ignores ?? [])
        : [];
      const mounts = ignored.includes('--mount') ? undefined : { rw: flags.rw ?? false };
      const keepState = (flags.keepState ?? false) && !ignored.includes('--state');
      const marked = [...markerFor(launcher), ...runArgs];
      const plan = planWrap(
        config,
        chosen,
        (entry) => wrapCommandFor(entry, launcher, marked, mounts, keepState),
        { update: flags.update ?? false },
      );
      report(plan, logger);
      setExitCode(await applyPlan(plan, flags, options, logger, 'wrapped'));
    } catch (error) {
      setExitCode(handle(error, logger));
    }
  });

  const unwrap = program
    .command('unwrap')
    .description('Undo wrap: each chosen entry starts its own command again, exactly as before.');
  addSelectionOptions(addTargetOptions(unwrap, true))
    .option('-q, --quiet', 'print only warnings and errors on stderr')
    .addHelpText(
      'after',
      `
An entry unchanged since wrap gets its original text back from the newest matching backup (the
whole file is byte-identical when nothing else changed); otherwise the command and arguments are
taken back out of the entry's own "mcp-sandbox run … -- <command>" arguments.`,
    )
    .action(async (flags: TargetFlags & { quiet?: boolean }) => {
      const logger = createStderrLogger({ stream: options.io.stderr, quiet: flags.quiet ?? false });
      try {
        const config = await requireConfig(resolveLocation(flags, options));
        const chosen = selection(flags, config.servers, 'unwrap');
        const plan = await planUnwrap(config, chosen);
        report(plan, logger);
        setExitCode(await applyPlan(plan, flags, options, logger, 'unwrapped'));
      } catch (error) {
        setExitCode(handle(error, logger));
      }
    });

  program
    .command('ls')
    .description('List the MCP servers each client is configured with, and whether each is sandboxed.')
    .addOption(new Option('--client <client>', 'only this client').choices(CLIENT_IDS))
    .option('--json', 'machine-readable output')
    .action(async (flags: { client?: string; json?: boolean }) => {
      const logger = createStderrLogger({ stream: options.io.stderr });
      try {
        setExitCode(await listAction(flags, options));
      } catch (error) {
        setExitCode(handle(error, logger));
      }
    });
}

export interface ListedServer {
  readonly name: string;
  readonly scope: string;
  readonly kind: ServerEntry['kind'];
  readonly sandboxed: boolean;
  readonly backend?: string;
  readonly backendIsDefault?: boolean;
  /** The command line the server runs (inside the sandbox when wrapped), or its URL. */
  readonly target: string;
}

export interface ListedConfig {
  readonly client: ClientId;
  readonly scope: string;
  readonly file: string;
  readonly exists: boolean;
  readonly error?: string;
  readonly servers: readonly ListedServer[];
}

/** Secrets sometimes sit in arguments (URLs with passwords, --token=…): never print them. */
export function maskSecrets(word: string): string {
  return word
    .replace(/(\/\/[^/\s:@]+:)[^@\s/]+@/g, '$1***@')
    .replace(/^(--?[\w-]*(?:key|token|secret|password|passwd|pat|auth)[\w-]*=).+$/i, '$1***');
}

function describe(entry: ServerEntry, options: CliOptions): ListedServer {
  const base = { name: entry.name, scope: entry.section.scope, kind: entry.kind };
  const line = (words: readonly string[]) => {
    const text = words.map(maskSecrets).join(' ');
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  };
  if (entry.kind === 'wrapped' && entry.wrapped) {
    const backend = entry.wrapped.backend ?? options.defaultBackend;
    return {
      ...base,
      sandboxed: true,
      backend,
      backendIsDefault: entry.wrapped.backend === undefined,
      target: line(entry.wrapped.server),
    };
  }
  if (entry.kind === 'remote')
    return { ...base, sandboxed: false, target: maskSecrets(entry.url ?? '(remote)') };
  return { ...base, sandboxed: false, target: entry.command ? line([entry.command, ...entry.args]) : '' };
}

async function listAction(flags: { client?: string; json?: boolean }, options: CliOptions): Promise<number> {
  const { io } = options;
  const ctx = locateContext(options);
  const clients = flags.client && isClientId(flags.client) ? [flags.client] : [...CLIENT_IDS];
  const listed: ListedConfig[] = [];
  for (const client of clients) {
    const scopes = CLIENTS[client].hasProjectScope ? [false, true] : [false];
    for (const project of scopes) {
      const location = locateConfig(client, project, ctx);
      let loaded: LoadedConfig | undefined;
      let error: string | undefined;
      try {
        loaded = await loadConfig(location);
      } catch (e) {
        if (!(e instanceof ConfigFileError)) throw e;
        error = e.message;
      }
      listed.push({
        client,
        scope: location.scope,
        file: location.file,
        exists: loaded !== undefined || error !== undefined,
        ...(error ? { error } : {}),
        servers: (loaded?.servers ?? []).map((s) => describe(s, options)),
      });
    }
  }
  if (flags.json) {
    io.stdout.write(`${jsonForTerminal(listed, 2)}\n`);
  } else {
    // Server names and commands come from config files that installers write: controls escaped.
    io.stdout.write(escapeControls(formatList(listed, io.env.HOME)));
  }
  return listed.some((l) => l.error) ? CONFIG_ERROR_EXIT : 0;
}

export function formatList(listed: readonly ListedConfig[], home: string | undefined): string {
  const lines: string[] = [];
  for (const config of listed) {
    const where = displayPath(config.file, home);
    const head = `${CLIENTS[config.client].name} (${config.scope}) ${where}`;
    if (config.error) {
      lines.push(`${head}: ✗ ${config.error}`);
      continue;
    }
    if (!config.exists) {
      lines.push(`${head}: no config file`);
      continue;
    }
    if (config.servers.length === 0) {
      lines.push(`${head}: no servers`);
      continue;
    }
    lines.push(head);
    const width = Math.max(...config.servers.map((s) => nameOf(s).length));
    for (const s of config.servers) {
      const status = s.sandboxed
        ? `✓ sandboxed, backend ${s.backend}${s.backendIsDefault ? ' (default)' : ''}`
        : s.kind === 'remote'
          ? '· remote, not run here'
          : s.kind === 'unknown'
            ? '? not a server entry mcp-sandbox understands'
            : '✗ not sandboxed';
      lines.push(`  ${nameOf(s).padEnd(width)}  ${status.padEnd(36)}  ${s.target}`.trimEnd());
    }
  }
  return `${lines.join('\n')}\n`;
}

function nameOf(s: ListedServer): string {
  return s.scope === 'local' ? `${s.name} (local)` : s.name;
}
