import { realpath } from 'node:fs/promises';
import { relative, sep } from 'node:path';
import { CLIENTS, type ConfigLocation } from './clients.js';
import { unifiedDiff } from './diff.js';
import {
  applyEdits,
  editedSlice,
  rewrapEdits,
  type TextEdit,
  unwrapEdits,
  type WrapCommand,
  wrapEdits,
} from './edit.js';
import {
  ConfigFileError,
  listBackups,
  readConfigText,
  resolveTarget,
  writeAtomic,
  writeBackup,
} from './files.js';
import { type JsonNode, JsonSyntaxError, parseJsonDocument } from './jsonc.js';
import { WRAP_MARKER } from './marker.js';
import type { VerdictContext } from './run-verdict.js';
import { listServers, ourCommand, type ServerEntry } from './servers.js';

/** What `run --env` accepts as a variable name. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface LoadedConfig {
  readonly location: ConfigLocation;
  /** What entries are judged against: the environment launchers are checked in (PATH), the backends. */
  readonly context: VerdictContext;
  /** The file edits go to (the target of a symlink). */
  readonly target: string;
  readonly text: string;
  readonly root: JsonNode;
  readonly servers: readonly ServerEntry[];
}

export function parseConfig(text: string, location: ConfigLocation, file = location.file): JsonNode {
  try {
    return parseJsonDocument(text, { comments: location.comments });
  } catch (error) {
    if (error instanceof JsonSyntaxError) {
      throw new ConfigFileError(
        'E_CONFIG_INVALID',
        file,
        `${file}:${error.line}:${error.column}: ${error.reason}`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Reads and parses a client config; undefined when the file does not exist. */
export async function loadConfig(
  location: ConfigLocation,
  context: VerdictContext,
): Promise<LoadedConfig | undefined> {
  const target = await resolveTarget(location.file);
  if (location.projectRoot !== undefined) await requireInside(target, location);
  const text = await readConfigText(target);
  if (text === undefined) return undefined;
  const root = parseConfig(text, location);
  return { location, context, target, text, root, servers: listServers(root, location, context) };
}

/** A project's config is the project's: one that links out of it (to a user config) is not edited. */
async function requireInside(target: string, location: ConfigLocation): Promise<void> {
  // A file that does not exist is read as missing and never written.
  if (
    !(await realpath(location.file).then(
      () => true,
      () => false,
    ))
  )
    return;
  const project = await resolveTarget(location.projectRoot as string);
  if (target.startsWith(project.endsWith(sep) ? project : project + sep)) return;
  throw new ConfigFileError(
    'E_CONFIG_INVALID',
    location.file,
    `${location.file}: links outside the project (to ${target}); refusing to read or edit it`,
  );
}

export async function requireConfig(
  location: ConfigLocation,
  context: VerdictContext,
): Promise<LoadedConfig> {
  const loaded = await loadConfig(location, context);
  if (!loaded) {
    throw new ConfigFileError(
      'E_CONFIG_MISSING',
      location.file,
      `no ${CLIENTS[location.client].name} config at ${location.file} (add a server in the client first, or pass --config <file>)`,
    );
  }
  return loaded;
}

/** One line per entry that was looked at: what happened to it and why. */
export interface EntryOutcome {
  readonly name: string;
  readonly action: 'wrapped' | 'rewrapped' | 'unwrapped' | 'skipped';
  readonly note?: string;
}

export interface ChangePlan {
  readonly config: LoadedConfig;
  readonly newText: string;
  readonly outcomes: readonly EntryOutcome[];
  readonly diff: string;
}

/** Which entries `--server`/`--all` picks; unknown names are reported by the caller. */
export function selectServers(
  servers: readonly ServerEntry[],
  names: readonly string[] | 'all',
): { chosen: ServerEntry[]; missing: string[] } {
  if (names === 'all') return { chosen: [...servers], missing: [] };
  const chosen = servers.filter((s) => names.includes(s.name));
  const missing = names.filter((n) => !servers.some((s) => s.name === n));
  return { chosen, missing };
}

/**
 * How to wrap one entry: the launcher, and run's options for it (its env keys included).
 * `rewrap`: its run options are replaced (`--update`), its server kept.
 */
export type WrapFor = (entry: ServerEntry, rewrap: boolean) => WrapCommand;

export function planWrap(
  config: LoadedConfig,
  chosen: readonly ServerEntry[],
  wrapFor: WrapFor,
  options: { update?: boolean } = {},
): ChangePlan {
  const edits: TextEdit[] = [];
  const outcomes: EntryOutcome[] = [];
  for (const entry of chosen) {
    const label = labelOf(entry);
    if (entry.kind === 'remote') {
      outcomes.push({
        name: label,
        action: 'skipped',
        note: 'remote (URL) entry: it runs nowhere on this machine',
      });
    } else if (entry.launcherEnv) {
      outcomes.push({
        name: label,
        action: 'skipped',
        note: `its "env" block sets ${entry.launcherEnv.join(', ')}, which mcp-sandbox itself would read on the host (a project's config chooses it); remove them from the entry, then wrap it`,
      });
    } else if (options.update && ourCommand(entry)) {
      edits.push(...rewrapEdits(config.text, entry, wrapFor(entry, true)));
      outcomes.push({ name: label, action: 'rewrapped' });
    } else if (entry.kind === 'wrapped') {
      outcomes.push({
        name: label,
        action: 'skipped',
        note: 'already sandboxed; wrap --update replaces its run options',
      });
    } else if (entry.kind === 'unknown') {
      outcomes.push({ name: label, action: 'skipped', note: entry.note ?? 'not a stdio server entry' });
    } else if (entry.envKeys.some((k) => !ENV_NAME.test(k))) {
      const bad = entry.envKeys.filter((k) => !ENV_NAME.test(k)).join(', ');
      outcomes.push({ name: label, action: 'skipped', note: `"env" has names run cannot forward: ${bad}` });
    } else {
      edits.push(...wrapEdits(config.text, entry, wrapFor(entry, false)));
      outcomes.push({ name: label, action: 'wrapped', ...(entry.note ? { note: entry.note } : {}) });
    }
  }
  return finish(config, edits, outcomes);
}

export async function planUnwrap(config: LoadedConfig, chosen: readonly ServerEntry[]): Promise<ChangePlan> {
  const edits: TextEdit[] = [];
  const outcomes: EntryOutcome[] = [];
  const backups = await loadBackups(config);
  for (const entry of chosen) {
    const label = labelOf(entry);
    if (!ourCommand(entry)) {
      outcomes.push({ name: label, action: 'skipped', note: 'not sandboxed' });
      continue;
    }
    const exact = await findOriginal(config, entry, backups);
    if (exact !== undefined) {
      const node = entry.property.value;
      edits.push({ start: node.start, end: node.end, text: exact });
      outcomes.push({ name: label, action: 'unwrapped', note: 'restored from the backup' });
      continue;
    }
    edits.push(...unwrapEdits(config.text, entry));
    const dropped = droppedOptions(entry);
    outcomes.push({
      name: label,
      action: 'unwrapped',
      note:
        dropped.length > 0
          ? `restored from its own arguments; run options dropped: ${dropped.join(' ')}`
          : 'restored from its own arguments',
    });
  }
  return finish(config, edits, outcomes);
}

function finish(config: LoadedConfig, edits: readonly TextEdit[], outcomes: EntryOutcome[]): ChangePlan {
  const newText = applyEdits(config.text, edits);
  // The result must still be a config the client accepts: check before anything is written.
  parseConfig(newText, config.location);
  const name = config.location.file;
  return { config, newText, outcomes, diff: unifiedDiff(config.text, newText, `${name}`, `${name} (new)`) };
}

/** How messages name an entry. */
export function labelOf(entry: ServerEntry): string {
  return entry.section.scope === 'local' ? `${entry.name} (local scope)` : entry.name;
}

/** The `--env KEY` flags that came from the env block are implied; anything else is reported. */
function droppedOptions(entry: ServerEntry): string[] {
  const args = ourCommand(entry)?.runArgs ?? [];
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const value = args[i + 1];
    if (arg === WRAP_MARKER) continue;
    if ((arg === '--env' || arg === '-e') && value !== undefined && entry.envKeys.includes(value)) {
      i++;
      continue;
    }
    out.push(arg);
  }
  return out;
}

interface Backup {
  readonly text: string;
  readonly root: JsonNode;
  readonly servers: readonly ServerEntry[];
}

async function loadBackups(config: LoadedConfig): Promise<Backup[]> {
  const out: Backup[] = [];
  for (const path of await listBackups(config.target)) {
    // A backup in a project folder may have been planted there: never a link, a FIFO or a device.
    const text = await readConfigText(path, { follow: false }).catch(() => undefined);
    if (text === undefined) continue;
    try {
      const root = parseJsonDocument(text, { comments: config.location.comments });
      out.push({ text, root, servers: listServers(root, config.location, config.context) });
    } catch {
      // not a config we can use
    }
  }
  return out;
}

/**
 * The entry's original source text, from the newest backup where wrapping that original the same
 * way gives exactly the entry as it is now (so nothing was changed in it since).
 */
async function findOriginal(
  config: LoadedConfig,
  entry: ServerEntry,
  backups: readonly Backup[],
): Promise<string | undefined> {
  const wrapped = ourCommand(entry);
  if (!wrapped) return undefined;
  const current = config.text.slice(entry.property.value.start, entry.property.value.end);
  for (const backup of backups) {
    const original = backup.servers.find(
      (s) => s.name === entry.name && s.section.path.join('\u0000') === entry.section.path.join('\u0000'),
    );
    if (original?.kind !== 'stdio') continue;
    const rewrapped = editedSlice(
      backup.text,
      original.property.value,
      wrapEdits(backup.text, original, { launcher: wrapped.launcher, runArgs: wrapped.runArgs }),
    );
    if (rewrapped === current) {
      return backup.text.slice(original.property.value.start, original.property.value.end);
    }
  }
  return undefined;
}

export interface WriteResult {
  readonly backup: string;
}

/** Backup, then atomic replace. */
export async function writePlan(plan: ChangePlan, now: Date): Promise<WriteResult> {
  const backup = await writeBackup(plan.config.target, plan.config.text, now);
  await writeAtomic(plan.config.target, plan.newText, plan.config.text);
  return { backup };
}

export function displayPath(file: string, home: string | undefined): string {
  if (home && (file === home || file.startsWith(`${home}/`))) return `~/${relative(home, file)}`;
  return file;
}
