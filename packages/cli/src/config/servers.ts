import { UsageError } from '@mcpsandbox/core';
import { parseRunWords, type RunWords } from '../commands/run.js';
import { BACKEND_ENV } from '../compat.js';
import type { ConfigLocation, ConfigSection } from './clients.js';
import { getProperty, type JsonNode, type JsonObject, type JsonProperty, toValue } from './jsonc.js';
import { checkLauncher, type Launcher, type LauncherContext } from './launcher.js';
import { launcherEnvNames } from './launcher-env.js';
import { WRAP_MARKER } from './marker.js';
import { judgeRunWords, type RunVerdict, type VerdictContext } from './run-verdict.js';

/** How an entry starts its server, as far as wrapping is concerned. */
export type ServerKind = 'stdio' | 'remote' | 'wrapped' | 'unknown';

export interface ServerEntry {
  readonly name: string;
  readonly section: ConfigSection;
  readonly property: JsonProperty;
  readonly kind: ServerKind;
  readonly command?: string;
  readonly args: readonly string[];
  /** Names in the entry's own `env` block (values are never read out, but `MCP_SANDBOX_BACKEND`'s). */
  readonly envKeys: readonly string[];
  readonly url?: string;
  /**
   * Set for `wrapped` entries only: their launcher is one of ours (see `checkLauncher`), and their
   * run options keep the server sandboxed (see `judgeRunWords`).
   */
  readonly wrapped?: WrappedCommand & { readonly checked: Launcher; readonly verdict: RunVerdict };
  /**
   * A `stdio` entry that reads like `… run -- <server>` but whose launcher is not one of ours, or
   * whose run options or env block weaken the sandbox: it runs on the host as it stands.
   */
  readonly claims?: WrappedCommand;
  /** Why an entry with our launcher is not sandboxed all the same, one reason a line. */
  readonly weakenedBy?: readonly string[];
  /**
   * Set for such an entry (our launcher, options that weaken the sandbox): `unwrap` takes it apart
   * and `wrap --update` replaces its run options as for a `wrapped` one; plain `wrap` sandboxes it whole.
   */
  readonly ours?: WrappedCommand & { readonly checked: Launcher };
  /**
   * Names in a project entry's env block that mcp-sandbox itself reads on the host (`PATH`,
   * `NODE_OPTIONS`, …): the repository's author would choose what runs there. wrap leaves the
   * entry alone until they are gone.
   */
  readonly launcherEnv?: readonly string[];
  /** Why the entry is `unknown`, or a caveat for wrapping it. */
  readonly note?: string;
}

/** An entry that already starts `mcp-sandbox run`, taken apart. */
export interface WrappedCommand {
  /** What starts mcp-sandbox: `['npx', '-y', 'mcp-sandbox@1.0.0']` or `['/usr/local/bin/mcp-sandbox']`. */
  readonly launcher: readonly string[];
  /** The run options between `run` and `--`. */
  readonly runArgs: readonly string[];
  /** The original server command and its arguments. */
  readonly server: readonly string[];
  /** `--backend`, when given. */
  readonly backend?: string;
  /** The run options as `run` reads them; unset when run would refuse them (see `refused`). */
  readonly run?: RunWords;
  /** Why run refuses the options (an unknown option, a missing value). */
  readonly refused?: string;
}

/** What classifying an entry depends on: its launcher's checks, and the run options' judge. */
export type EntryContext = LauncherContext & VerdictContext;

/** What an entry starts through mcp-sandbox's launcher, sandboxed or not: for unwrap and --update. */
export function ourCommand(
  entry: ServerEntry,
): (WrappedCommand & { readonly checked: Launcher }) | undefined {
  return entry.wrapped ?? entry.ours;
}

/** Every server entry of a parsed config, in file order, section by section. */
export function listServers(
  root: JsonNode,
  location: ConfigLocation,
  context: VerdictContext,
): ServerEntry[] {
  const trust: EntryContext = {
    ...context,
    ...(location.projectRoot !== undefined ? { projectRoot: location.projectRoot } : {}),
  };
  const out: ServerEntry[] = [];
  for (const section of location.sections) {
    const map = sectionNode(root, section.path);
    if (!map) continue;
    const seen = new Set<string>();
    const entries: ServerEntry[] = [];
    // Duplicate names: the client uses the last one, as JSON.parse does; so do we.
    for (let i = map.properties.length - 1; i >= 0; i--) {
      const property = map.properties[i] as JsonProperty;
      if (seen.has(property.key)) continue;
      seen.add(property.key);
      entries.push(classify(property, section, trust));
    }
    out.push(...entries.reverse());
  }
  return out;
}

export function sectionNode(root: JsonNode, path: readonly string[]): JsonObject | undefined {
  let node: JsonNode | undefined = root;
  for (const key of path) node = getProperty(node, key)?.value;
  return node?.kind === 'object' ? node : undefined;
}

const REMOTE_TYPES = new Set(['http', 'sse', 'streamable-http', 'streamableHttp', 'ws', 'websocket']);

function classify(property: JsonProperty, section: ConfigSection, trust: EntryContext): ServerEntry {
  const base = { name: property.key, section, property, args: [] as string[], envKeys: [] as string[] };
  const node = property.value;
  if (node.kind !== 'object') return { ...base, kind: 'unknown', note: 'the entry is not an object' };
  const value = toValue(node) as Record<string, unknown>;
  const envValue = value.env;
  const envKeys =
    envValue && typeof envValue === 'object' && !Array.isArray(envValue) ? Object.keys(envValue) : [];
  const url = [value.url, value.serverUrl].find((u): u is string => typeof u === 'string');
  const type = typeof value.type === 'string' ? value.type : undefined;
  if (url !== undefined || (type !== undefined && REMOTE_TYPES.has(type))) {
    return { ...base, envKeys, kind: 'remote', ...(url !== undefined ? { url } : {}) };
  }
  const command = value.command;
  if (typeof command !== 'string' || command === '') {
    return { ...base, envKeys, kind: 'unknown', note: 'no "command" string' };
  }
  const rawArgs = value.args ?? [];
  if (!Array.isArray(rawArgs) || rawArgs.some((a) => typeof a !== 'string')) {
    return { ...base, envKeys, command, kind: 'unknown', note: '"args" is not an array of strings' };
  }
  const args = rawArgs as string[];
  // A project's env block is the repository author's: names the host-side launcher reads count.
  const launcherEnv = trust.projectRoot !== undefined ? launcherEnvNames(envKeys) : [];
  const wrapped = parseWrapped(command, args);
  const checked = wrapped ? checkLauncher(wrapped.launcher, trust) : undefined;
  const verdict =
    wrapped?.run && checked
      ? judgeRunWords(wrapped.run, { env: envStrings(envValue), envKeys }, trust)
      : undefined;
  const weakenedBy = wrapped && checked ? weaknesses(wrapped, launcherEnv, verdict) : [];
  if (wrapped && checked && verdict && weakenedBy.length === 0) {
    return { ...base, envKeys, command, args, kind: 'wrapped', wrapped: { ...wrapped, checked, verdict } };
  }
  const note =
    typeof value.envFile === 'string'
      ? 'variables from "envFile" are not forwarded into the sandbox; add --env KEY for each one it needs'
      : wrapped && checked
        ? `it only claims to be sandboxed: ${weakenedBy.join('; ')}; so it is sandboxed as it stands`
        : wrapped
          ? 'it only claims to be sandboxed: its launcher is not mcp-sandbox, so it is sandboxed as it stands'
          : undefined;
  return {
    ...base,
    envKeys,
    command,
    args,
    kind: 'stdio',
    ...(wrapped ? { claims: wrapped } : {}),
    ...(weakenedBy.length > 0 ? { weakenedBy } : {}),
    ...(wrapped && checked ? { ours: { ...wrapped, checked } } : {}),
    ...(launcherEnv.length > 0 ? { launcherEnv } : {}),
    ...(note ? { note } : {}),
  };
}

/** Why an entry with our launcher is not sandboxed all the same (empty when it is). */
function weaknesses(
  wrapped: WrappedCommand,
  launcherEnv: readonly string[],
  verdict: RunVerdict | undefined,
): string[] {
  const out: string[] = [];
  if (launcherEnv.length > 0) {
    out.push(
      `its "env" block sets ${launcherEnv.join(', ')}, which mcp-sandbox itself reads on the host, before any sandbox exists`,
    );
  }
  if (!verdict) out.push(`run refuses its options (${wrapped.refused ?? 'unreadable'})`);
  else out.push(...verdict.weakenedBy);
  return out;
}

/** The one value ever read out of an env block: `MCP_SANDBOX_BACKEND`, which picks the backend. */
function envStrings(value: unknown): Readonly<Record<string, string>> {
  if (!value || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, BACKEND_ENV))
    return {};
  const backend = (value as Record<string, unknown>)[BACKEND_ENV];
  return typeof backend === 'string' ? { [BACKEND_ENV]: backend } : {};
}

const PACKAGE_RUNNERS = new Set(['npx', 'pnpx', 'bunx']);

function baseName(command: string): string {
  const last = command.split(/[\\/]/).pop() ?? command;
  return last.replace(/\.(cmd|exe|ps1|bat)$/i, '');
}

/**
 * Recognises an entry that starts `mcp-sandbox run …`: by its launcher (`mcp-sandbox`, or
 * `npx [-y] mcp-sandbox[@v]`), or by the marker wrap writes after `run` for any other launcher
 * (`/opt/build/dist/bin.js run --wrapped …`, `node bin.js run --wrapped …`).
 */
export function parseWrapped(command: string, args: readonly string[]): WrappedCommand | undefined {
  const argv = [command, ...args];
  let runAt = -1;
  const name = baseName(command);
  if (name === 'mcp-sandbox') {
    runAt = 1;
  } else if (command === 'wsl.exe' && argv[1] === '-e' && argv[2] === 'mcp-sandbox') {
    // Windows: the mcp-sandbox inside WSL2 (see wsl.ts).
    runAt = 3;
  } else if (PACKAGE_RUNNERS.has(name)) {
    let i = 1;
    while (i < argv.length && (argv[i] as string).startsWith('-')) i++;
    if (/^mcp-sandbox(@\S*)?$/.test(argv[i] ?? '')) runAt = i + 1;
  }
  if (runAt === -1) {
    // Only among the launcher's own words: a server's arguments after "--" never count.
    const end = argv.indexOf('--');
    const marked = argv.findIndex((arg, i) => arg === WRAP_MARKER && argv[i - 1] === 'run');
    if (marked !== -1 && (end === -1 || marked < end)) runAt = marked - 1;
  }
  if (runAt === -1 || argv[runAt] !== 'run') return undefined;
  // The words after run are read by run's own parser: where its options end, what each means.
  const words = argv.slice(runAt + 1);
  let run: RunWords | undefined;
  let refused: string | undefined;
  try {
    run = parseRunWords(words);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    refused = error.message;
  }
  // Options run refuses: with "--" (as wrap writes it), the server is still what follows it.
  const dashes = words.indexOf('--');
  const server = run ? run.command : dashes === -1 ? [] : words.slice(dashes + 1);
  if (server.length === 0) return undefined;
  const runArgs = words.slice(0, words.length - server.length);
  if (runArgs[runArgs.length - 1] === '--') runArgs.pop();
  return {
    launcher: argv.slice(0, runAt),
    runArgs,
    server,
    ...(run?.backendGiven ? { backend: run.flags.backend } : {}),
    ...(run ? { run } : { refused: refused ?? 'unreadable' }),
  };
}
