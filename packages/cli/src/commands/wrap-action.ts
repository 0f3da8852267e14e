import { platform as osPlatform } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import {
  createStderrLogger,
  escapeControls,
  type Logger,
  parseDuration,
  parseSecretFlag,
  UsageError,
} from '@mcpsandbox/core';
import type { Command } from 'commander';
import { BACKEND_ENV } from '../compat.js';
import {
  CLIENTS,
  type ClientId,
  type ConfigLocation,
  explicitConfig,
  locateConfig,
} from '../config/clients.js';
import type { WrapCommand } from '../config/edit.js';
import { envFlagsFor } from '../config/env-flags.js';
import { WSL_LAUNCHER } from '../config/launcher.js';
import {
  type ChangePlan,
  labelOf,
  planUnwrap,
  planWrap,
  requireConfig,
  selectServers,
  writePlan,
} from '../config/operations.js';
import {
  isKnownWriter,
  keepsStateOfItsOwn,
  type PathMount,
  pathMountsFor,
  type RefusedPath,
} from '../config/path-mounts.js';
import { pythonBackendNote, pythonStartNotes } from '../config/python-runner.js';
import { judgeRunWords } from '../config/run-verdict.js';
import { ourCommand, type ServerEntry } from '../config/servers.js';
import { windowsPathMountsFor, windowsRefusal } from '../config/windows-mounts.js';
import { parseFs } from '../fs-copy.js';
import type { CliOptions } from '../options.js';
import { parseAllowNet, parseMount, parseSetting } from '../parse.js';
import { wslMountFlag } from '../wsl.js';
import { locateContext, reportConfigError, verdictContext } from './config-context.js';
import { parseRunWords, type RunFlags } from './run.js';
import { substitutesSecrets } from './secret-plan.js';
import { markerFor, type ResolvedLauncher, resolveLauncher } from './wrap-launcher.js';

export interface TargetFlags {
  client?: string;
  project?: boolean;
  config?: string;
  server: string[];
  all?: boolean;
  dryRun?: boolean;
}

export interface WrapFlags extends RunFlags, TargetFlags {
  launcher: string;
  rw?: boolean;
  update?: boolean;
  keepState?: boolean;
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
    case 'secret':
      // Parsed for its refusals (a value on the command line above all); written as given.
      parseSecretFlag(value);
      return value;
    case 'ttl':
      parseDuration(value, '--ttl');
      return value;
    case 'allowNet':
      return parseAllowNet(value);
    case 'mount': {
      const windows = windowsMount(value, options);
      if (windows) return windows;
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
 * `--mount C:\data[:ro|rw]` given to wrap on Windows: the WSL spelling, under the rule the
 * server's own paths follow (windows-mounts.ts), the home and its settings never.
 */
function windowsMount(value: string, options: CliOptions): string | undefined {
  if ((options.platform ?? osPlatform()) !== 'win32') return undefined;
  const match = /^(.*?)(?::(ro|rw))?$/.exec(value) as RegExpExecArray;
  const host = match[1] as string;
  const reason = windowsRefusal(host, options.io.env.USERPROFILE);
  if (reason) throw new UsageError(`--mount ${value}: ${reason}`);
  return wslMountFlag(host, (match[2] as 'ro' | 'rw' | undefined) ?? 'ro');
}

/** What wrapping one entry does besides its run options: for the lines printed before writing. */
export interface WrapReport {
  readonly mounts: readonly string[];
  readonly refused: readonly RefusedPath[];
  readonly notes: readonly string[];
  /** How each variable of its env block is passed (`--secret` or `--env`), and why. */
  readonly envChoices: readonly string[];
}

export interface WrapSettings {
  readonly launcher: readonly string[];
  /** run's options, the marker first when the launcher needs one. */
  readonly runArgs: readonly string[];
  /** Carry host paths across as mounts (unset where the backend applies none). */
  readonly mounts?: { readonly rw: boolean; readonly home?: string };
  readonly keepState?: boolean;
  /** Replace the run options of an entry that starts mcp-sandbox already, keeping its server. */
  readonly rewrap?: boolean;
  /** Windows: the server runs inside WSL2; its Windows paths are translated (windows-mounts.ts). */
  readonly windows?: boolean;
  /**
   * The backend the entry runs on, and whether it substitutes `--secret`: then a known server's
   * token becomes `--secret NAME@host` (see env-flags.ts). Unset: every name is `--env`.
   */
  readonly backend?: { readonly id: string; readonly substitutes: boolean };
}

/**
 * The entry's env keys become `--env KEY`, or `--secret KEY@host` for a known server's token (see
 * `envFlagsFor`): the values stay in the client's env block. Host paths
 * its arguments name become `--mount path` when `mounts` is set (see `pathMountsFor`), unless the
 * user's own `--mount` already shows that path.
 */
export function wrapCommandFor(entry: ServerEntry, settings: WrapSettings): WrapCommand & WrapReport {
  const { launcher, runArgs } = settings;
  const given = new Set<string>();
  const mounted = new Set<string>();
  const userMounts: string[] = [];
  const allowNet: string[] = [];
  for (let i = 0; i < runArgs.length; i++) {
    if (runArgs[i] === '--env') given.add(runArgs[i + 1] as string);
    if (runArgs[i] === '--allow-net') allowNet.push(runArgs[i + 1] as string);
    // A bound secret's variable stays in the env block for run to read, never as --env too.
    if (runArgs[i] === '--secret') given.add((runArgs[i + 1] as string).split('@')[0] as string);
    if (runArgs[i] === '--mount') {
      const spec = runArgs[i + 1] as string;
      userMounts.push(spec);
      mounted.add(spec.split(':')[0] as string);
    }
  }
  const stateName = settings.keepState && !runArgs.includes('--state') ? stateNameFor(entry.name) : undefined;
  const state = stateName ? ['--state', stateName] : [];
  const ours = settings.rewrap ? ourCommand(entry) : undefined;
  const server = ours ? ours.server : [entry.command ?? '', ...entry.args];
  const fromBlock = envFlagsFor({
    server,
    keys: entry.envKeys.filter((k) => !given.has(k)),
    envKeys: entry.envKeys,
    backend: settings.backend?.id ?? '',
    substitutes: settings.backend?.substitutes ?? false,
    allowNet,
  });
  const found: { mounts: readonly PathMount[]; refused: readonly RefusedPath[]; server?: readonly string[] } =
    settings.windows
      ? windowsPathMountsFor(server, {
          rw: (settings.mounts?.rw ?? false) || isKnownWriter(server),
          ...(settings.mounts?.home !== undefined ? { home: settings.mounts.home } : {}),
          ...(settings.mounts ? {} : { exists: () => false }),
          rewrap: settings.rewrap ?? false,
        })
      : settings.mounts
        ? pathMountsFor(server, {
            rw: settings.mounts.rw,
            ...(settings.mounts.home !== undefined ? { home: settings.mounts.home } : {}),
          })
        : { mounts: [], refused: [] };
  const fromPaths = found.mounts
    .filter((m) => !mounted.has(m.path))
    .map((m) => `${m.path}:${m.path}:${m.mode}`);
  const notes: string[] = pythonStartNotes(server);
  if (!state.length && !runArgs.includes('--state') && keepsStateOfItsOwn(server)) {
    notes.push(
      "its data (kept in its home) will not persist across sessions; wrap --update --keep-state keeps it under the entry's name",
    );
  }
  if (settings.windows && entry.envKeys.length > 0) {
    notes.push(
      `on Windows its "env" block reaches WSL only through WSLENV: add "WSLENV": "${entry.envKeys.join(':')}" to that block`,
    );
  }
  const serverArgs = found.server && !ours ? { serverArgs: found.server.slice(1) } : {};
  return {
    launcher,
    runArgs: [...runArgs, ...state, ...fromPaths.flatMap((m) => ['--mount', m]), ...fromBlock.args],
    ...serverArgs,
    mounts: [...userMounts, ...fromPaths],
    refused: found.refused,
    notes,
    envChoices: settings.backend ? fromBlock.lines : [],
  };
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

function report(plan: ChangePlan, logger: Logger, details?: ReadonlyMap<string, WrapReport>): void {
  for (const o of plan.outcomes) {
    const line = `${o.name}: ${o.action}${o.note ? ` (${o.note})` : ''}`;
    if (o.action === 'skipped') logger.info(`${line}, left alone`);
    else logger.info(line);
    const detail = o.action === 'skipped' ? undefined : details?.get(o.name);
    if (!detail) continue;
    // What the entry will see of the host, on a line of its own, before anything is written.
    const mounts = detail.mounts.map((m) => {
      const [path, , mode] = m.split(':');
      return `${path} (${mode ?? 'ro'})`;
    });
    logger.info(`${o.name}: mounts ${mounts.length > 0 ? mounts.join(', ') : 'no host paths'}`);
    if (detail.refused.length > 0) {
      logger.warn(
        `${o.name}: not mounted: ${detail.refused.map((r) => `${r.path} (${r.reason})`).join(', ')}`,
      );
    }
    for (const choice of detail.envChoices) logger.info(`${o.name}: env ${choice}`);
    for (const note of detail.notes) logger.warn(`${o.name}: ${note}`);
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

async function wrapAction(
  flags: WrapFlags,
  command: Command,
  options: CliOptions,
  logger: Logger,
): Promise<number> {
  const location = resolveLocation(flags, options);
  const runArgs = runArgsFromFlags(command, flags, options);
  warnIfWeakened(runArgs, options, logger);
  const ctx = locateContext(options);
  const windows = ctx.platform === 'win32';
  const resolved = windows
    ? windowsLauncher(flags.launcher)
    : await resolveLauncher(flags.launcher, options.version, ctx, options.self);
  const config = await requireConfig(location, verdictContext(options));
  const chosen = selection(flags, config.servers, 'wrap');
  // Paths an entry names are carried across as mounts, and its writes are kept under its
  // name, where the backend applies mounts and state at all.
  const ignored = Object.hasOwn(options.backends, flags.backend)
    ? (options.backends[flags.backend]?.ignores ?? [])
    : [];
  const home = windows ? options.io.env.USERPROFILE : options.io.env.HOME;
  const mounts = ignored.includes('--mount')
    ? undefined
    : { rw: flags.rw ?? false, ...(home !== undefined ? { home } : {}) };
  const keepState = (flags.keepState ?? false) && !ignored.includes('--state');
  // --update keeps the launcher an entry has (checked when the config was read) unless told.
  const keepLauncher = command.getOptionValueSource('launcher') !== 'cli';
  const details = new Map<string, WrapReport>();
  let launcherUsed = false;
  const plan = planWrap(
    config,
    chosen,
    (entry, rewrap) => {
      const own = keepLauncher && rewrap ? ourCommand(entry)?.checked.argv : undefined;
      const launcher = own ?? resolved.launcher;
      if (!own) launcherUsed = true;
      // An env block's MCP_SANDBOX_BACKEND would choose the backend of the entry's own launcher:
      // the backend wrap uses is written out instead.
      const backend =
        entry.envKeys.includes(BACKEND_ENV) && !runArgs.includes('--backend')
          ? ['--backend', flags.backend]
          : [];
      const wrapped = wrapCommandFor(entry, {
        launcher,
        runArgs: [...markerFor(launcher), ...backend, ...runArgs],
        ...(mounts ? { mounts } : {}),
        keepState,
        rewrap,
        windows,
        backend: { id: flags.backend, substitutes: substitutesSecrets(flags.backend) },
      });
      const server = rewrap ? (ourCommand(entry)?.server ?? []) : [entry.command ?? '', ...entry.args];
      const refusal = pythonBackendNote(server, flags.backend);
      details.set(labelOf(entry), refusal ? { ...wrapped, notes: [...wrapped.notes, refusal] } : wrapped);
      return wrapped;
    },
    { update: flags.update ?? false },
  );
  if (launcherUsed && resolved.note) logger.info(`launcher: ${resolved.note}`);
  report(plan, logger, details);
  return applyPlan(plan, flags, options, logger, 'wrapped');
}

/** On Windows every entry starts the mcp-sandbox inside WSL2: `wsl.exe -e mcp-sandbox run …`. */
function windowsLauncher(launcher: string): ResolvedLauncher {
  if (launcher !== 'auto' && launcher !== 'wsl') {
    throw new UsageError(
      `--launcher ${launcher}: on Windows, wrap writes ${WSL_LAUNCHER.join(' ')} (the sandbox is bubblewrap inside WSL2); install mcp-sandbox inside WSL and leave --launcher out`,
    );
  }
  return { launcher: WSL_LAUNCHER };
}

/**
 * Options the user gave wrap that ls will not count as sandboxed (`--backend none`, a mount of a
 * credentials folder): written as asked, but said before anything is.
 */
function warnIfWeakened(runArgs: readonly string[], options: CliOptions, logger: Logger): void {
  const verdict = judgeRunWords(
    parseRunWords([...runArgs, '--', 'server']),
    { env: {}, envKeys: [] },
    verdictContext(options),
  );
  for (const reason of verdict.weakenedBy) {
    logger.warn(`${reason}: the entries wrapped with it will not count as sandboxed (mcp-sandbox ls)`);
  }
}

/** `mcp-sandbox wrap`: resolves with the exit code. */
export async function wrapCommand(flags: WrapFlags, command: Command, options: CliOptions): Promise<number> {
  const logger = createStderrLogger({ stream: options.io.stderr, quiet: flags.quiet ?? false });
  try {
    return await wrapAction(flags, command, options, logger);
  } catch (error) {
    return reportConfigError(error, logger);
  }
}

/** `mcp-sandbox unwrap`: resolves with the exit code. */
export async function unwrapCommand(
  flags: TargetFlags & { quiet?: boolean },
  options: CliOptions,
): Promise<number> {
  const logger = createStderrLogger({ stream: options.io.stderr, quiet: flags.quiet ?? false });
  try {
    const config = await requireConfig(resolveLocation(flags, options), verdictContext(options));
    const chosen = selection(flags, config.servers, 'unwrap');
    const plan = await planUnwrap(config, chosen);
    report(plan, logger);
    return await applyPlan(plan, flags, options, logger, 'unwrapped');
  } catch (error) {
    return reportConfigError(error, logger);
  }
}
