import type { ConfigLocation, ConfigSection } from './clients.js';
import { getProperty, type JsonNode, type JsonObject, type JsonProperty, toValue } from './jsonc.js';
import { checkLauncher, type Launcher, type LauncherContext } from './launcher.js';
import { WRAP_MARKER } from './marker.js';

/** How an entry starts its server, as far as wrapping is concerned. */
export type ServerKind = 'stdio' | 'remote' | 'wrapped' | 'unknown';

export interface ServerEntry {
  readonly name: string;
  readonly section: ConfigSection;
  readonly property: JsonProperty;
  readonly kind: ServerKind;
  readonly command?: string;
  readonly args: readonly string[];
  /** Names in the entry's own `env` block (values are never read out). */
  readonly envKeys: readonly string[];
  readonly url?: string;
  /** Set for `wrapped` entries only: their launcher is one of ours (see `checkLauncher`). */
  readonly wrapped?: WrappedCommand & { readonly checked: Launcher };
  /**
   * A `stdio` entry that reads like `… run -- <server>` but whose launcher is not one of ours: it
   * runs its own command on the host, whatever it claims.
   */
  readonly claims?: WrappedCommand;
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
}

/** Every server entry of a parsed config, in file order, section by section. */
export function listServers(
  root: JsonNode,
  location: ConfigLocation,
  env: LauncherContext['env'],
): ServerEntry[] {
  const trust: LauncherContext = {
    env,
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

function classify(property: JsonProperty, section: ConfigSection, trust: LauncherContext): ServerEntry {
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
  const wrapped = parseWrapped(command, args);
  const checked = wrapped ? checkLauncher(wrapped.launcher, trust) : undefined;
  if (wrapped && checked) {
    return { ...base, envKeys, command, args, kind: 'wrapped', wrapped: { ...wrapped, checked } };
  }
  const note =
    typeof value.envFile === 'string'
      ? 'variables from "envFile" are not forwarded into the sandbox; add --env KEY for each one it needs'
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
    ...(note ? { note } : {}),
  };
}

/** Run options that take a value (the rest are flags). Kept in step with `run`'s options. */
const VALUE_OPTIONS = new Set([
  '-b',
  '--backend',
  '-e',
  '--env',
  '--ttl',
  '--setup',
  '--allow-net',
  '--mount',
  '--fs',
  '--template',
  '--state',
  '--install-allow-net',
  '--install-env',
  '--backend-option',
  '--trace',
  '--max-message-size',
  '--drain-timeout',
  '--kill-grace',
  '--allow-tool',
  '--deny-tool',
  '--pin-tools',
  '--require-isolation',
]);

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
  const runArgs: string[] = [];
  let backend: string | undefined;
  let i = runAt + 1;
  // With "--" after run's options (as wrap writes it), everything before it is run's, whatever
  // options run has; otherwise the options are walked.
  const firstIsOption = (argv[runAt + 1] ?? '').startsWith('-');
  const dashes = firstIsOption ? argv.indexOf('--', runAt + 1) : -1;
  const end = dashes === -1 ? argv.length : dashes;
  while (i < end) {
    const arg = argv[i] as string;
    if (!arg.startsWith('-') && dashes === -1) break;
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (VALUE_OPTIONS.has(flag) && eq === -1) {
      const value = argv[i + 1];
      if (value === undefined || i + 1 >= end) break;
      if (flag === '-b' || flag === '--backend') backend = value;
      runArgs.push(arg, value);
      i += 2;
    } else {
      if (flag === '--backend') backend = arg.slice(eq + 1);
      runArgs.push(arg);
      i++;
    }
  }
  if (dashes !== -1) {
    runArgs.length = 0;
    runArgs.push(...argv.slice(runAt + 1, dashes));
    i = dashes + 1;
  }
  const server = argv.slice(i);
  if (server.length === 0) return undefined;
  return { launcher: argv.slice(0, runAt), runArgs, server, ...(backend ? { backend } : {}) };
}
