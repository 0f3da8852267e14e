import { createStderrLogger, escapeControls, jsonForTerminal } from '@mcpsandbox/core';
import { CLIENT_IDS, CLIENTS, type ClientId, isClientId, locateConfig } from '../config/clients.js';
import { ConfigFileError } from '../config/files.js';
import { displayPath, type LoadedConfig, loadConfig } from '../config/operations.js';
import { pythonStartNotes } from '../config/python-runner.js';
import type { ServerEntry } from '../config/servers.js';
import type { CliOptions } from '../options.js';
import { CONFIG_ERROR_EXIT, locateContext, reportConfigError, verdictContext } from './config-context.js';

/** `mcp-sandbox ls`: resolves with the exit code. */
export async function listCommand(
  flags: { client?: string; json?: boolean },
  options: CliOptions,
): Promise<number> {
  const logger = createStderrLogger({ stream: options.io.stderr });
  try {
    return await listAction(flags, options);
  } catch (error) {
    return reportConfigError(error, logger);
  }
}

export interface ListedServer {
  readonly name: string;
  readonly scope: string;
  readonly kind: ServerEntry['kind'];
  readonly sandboxed: boolean;
  /** It reads like `… run -- <server>`, but its launcher is not mcp-sandbox: it runs on the host. */
  readonly claimsToBe?: boolean;
  /** What starts mcp-sandbox, for a sandboxed entry. */
  readonly launcher?: string;
  /** Names in its "env" block that its `--env` list does not pass: the server never sees them. */
  readonly withheldEnv?: readonly string[];
  readonly backend?: string;
  readonly backendIsDefault?: boolean;
  /** Why an entry that starts mcp-sandbox is not sandboxed all the same, in words. */
  readonly weakenedBy?: readonly string[];
  /** What a sandboxed entry lets its server do on the host (rw mounts, network grants), in words. */
  readonly grants?: readonly string[];
  /** What a sandboxed Python entry does not do as expected (run refuses it, pipx installs at each start). */
  readonly notes?: readonly string[];
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

function describe(entry: ServerEntry): ListedServer {
  const base = { name: entry.name, scope: entry.section.scope, kind: entry.kind };
  const line = (words: readonly string[]) => {
    const text = words.map(maskSecrets).join(' ');
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  };
  if (entry.kind === 'wrapped' && entry.wrapped) {
    const { verdict } = entry.wrapped;
    const withheld = withheldEnv(entry.envKeys, entry.wrapped.runArgs);
    const notes = pythonStartNotes(entry.wrapped.server);
    return {
      ...base,
      sandboxed: true,
      launcher: line(entry.wrapped.checked.argv),
      ...(withheld.length > 0 ? { withheldEnv: withheld } : {}),
      backend: verdict.backend,
      backendIsDefault: verdict.backendIsDefault,
      ...(verdict.grants.length > 0 ? { grants: verdict.grants.map(maskSecrets) } : {}),
      ...(notes.length > 0 ? { notes } : {}),
      target: line(entry.wrapped.server),
    };
  }
  if (entry.kind === 'remote')
    return { ...base, sandboxed: false, target: maskSecrets(entry.url ?? '(remote)') };
  return {
    ...base,
    sandboxed: false,
    ...(entry.claims && !entry.weakenedBy ? { claimsToBe: true } : {}),
    ...(entry.weakenedBy ? { weakenedBy: entry.weakenedBy.map(maskSecrets) } : {}),
    // The whole command line, launcher first: what really starts on the host.
    target: entry.command ? line([entry.command, ...entry.args]) : '',
  };
}

/**
 * The env-block names that `run` is not told to pass (`--env KEY`, `-e KEY`, `--env=KEY`) nor to
 * bind (`--secret KEY@host`: the server holds a stand-in for it).
 */
export function withheldEnv(envKeys: readonly string[], runArgs: readonly string[]): string[] {
  const passed = new Set<string>();
  for (let i = 0; i < runArgs.length; i++) {
    const arg = runArgs[i] as string;
    const value = arg === '--env' || arg === '-e' ? runArgs[i + 1] : /^--env=(.*)$/.exec(arg)?.[1];
    if (value !== undefined) passed.add(value.split('=')[0] as string);
    const bound = arg === '--secret' ? runArgs[i + 1] : /^--secret=(.*)$/.exec(arg)?.[1];
    if (bound !== undefined) passed.add(bound.split('@')[0] as string);
  }
  return envKeys.filter((key) => !passed.has(key));
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
        loaded = await loadConfig(location, verdictContext(options));
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
        servers: (loaded?.servers ?? []).map((s) => describe(s)),
      });
    }
  }
  if (flags.json) {
    io.stdout.write(`${jsonForTerminal(listed, 2)}\n`);
  } else {
    // Server names and commands come from config files that installers write: controls escaped.
    io.stdout.write(escapeControls(formatList(listed, io.env.HOME)));
    const installing = (await options.installCache?.())?.installing ?? [];
    if (installing.length > 0) {
      const lines = installing.map((i) => `  ${i.spec}  since ${i.since}, process ${i.pid}`);
      io.stdout.write(
        escapeControls(
          `installs in progress (they go on after a client gives up; start the server again when done):\n${lines.join('\n')}\n`,
        ),
      );
    }
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
        : s.claimsToBe
          ? '✗ not sandboxed (claims to be)'
          : s.kind === 'remote'
            ? '· remote, not run here'
            : s.kind === 'unknown'
              ? '? not a server entry mcp-sandbox understands'
              : '✗ not sandboxed';
      lines.push(`  ${nameOf(s).padEnd(width)}  ${status.padEnd(36)}  ${s.target}`.trimEnd());
      const indent = `  ${' '.repeat(width)}  `;
      for (const reason of s.weakenedBy ?? []) lines.push(`${indent}✗ ${reason}`);
      if (s.grants) lines.push(`${indent}⚠ ${s.grants.join('; ')}`);
      for (const note of s.notes ?? []) lines.push(`${indent}⚠ ${note}`);
      if (s.withheldEnv) {
        lines.push(
          `  ${' '.repeat(width)}  ⚠ env ${s.withheldEnv.join(', ')}: not passed into the sandbox, the server will not see it (wrap --update --server <name> passes each)`,
        );
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

function nameOf(s: ListedServer): string {
  return s.scope === 'local' ? `${s.name} (local)` : s.name;
}
