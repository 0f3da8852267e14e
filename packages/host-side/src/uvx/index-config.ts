/**
 * The one Python index a uvx install may reach, found the way `uvx` finds it: UV_DEFAULT_INDEX,
 * then UV_INDEX_URL, then the user-level uv.toml (`$XDG_CONFIG_HOME/uv/uv.toml`, else
 * `~/.config/uv/uv.toml`), then the system one (`$XDG_CONFIG_DIRS/uv/uv.toml`, else
 * `/etc/uv/uv.toml`), or the file UV_CONFIG_FILE names instead of both; else PyPI. Never a
 * project file (uv's tool commands do not read them either): a cloned repository or a server's
 * rw mount could have written one. uv does not read pip.conf, and neither does this.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { UsageError } from '@mcpsandbox/core';

export const DEFAULT_PYTHON_INDEX = 'https://pypi.org/simple';

declare const validated: unique symbol;

/** An http(s) index URL without credentials or fragment, no trailing slash; only made here. */
export interface PythonIndex {
  readonly url: string;
  /** Where it came from, for messages: a variable's name, a file's path, or `default`. */
  readonly source: string;
  readonly [validated]: true;
}

type Env = Readonly<Record<string, string | undefined>>;
const MAX_CONFIG_BYTES = 256 * 1024;

/** Parses `text` as an index URL from `source`; a refusal says what is wrong and where. */
export function parsePythonIndex(text: string, source: string): PythonIndex {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`the Python index ${JSON.stringify(text)} (${source}) is not a URL`);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.hash) {
    throw new UsageError(
      `the Python index (${source}) must be an http(s) URL without credentials or fragment`,
    );
  }
  return { url: url.href.replace(/\/+$/, ''), source } as PythonIndex;
}

/** The index the user's own settings choose (see the module comment). */
export function userPythonIndex(
  env: Env,
  read: (path: string) => string | undefined = readConfig,
): PythonIndex {
  for (const name of ['UV_DEFAULT_INDEX', 'UV_INDEX_URL'] as const) {
    const value = env[name];
    if (value) return parsePythonIndex(value, name);
  }
  if (!['1', 'true', 'yes', 'on'].includes((env.UV_NO_CONFIG ?? '').toLowerCase())) {
    for (const file of configFiles(env)) {
      const text = read(file);
      if (text === undefined) continue;
      const found = indexOfConfig(text, file);
      if (found) return parsePythonIndex(found, file);
      // uv merges the files: one that names no index leaves the choice to the next.
    }
  }
  return parsePythonIndex(DEFAULT_PYTHON_INDEX, 'default');
}

/** The config files uvx reads, most specific first; only absolute paths from the environment. */
function configFiles(env: Env): string[] {
  const absolute = (value: string | undefined) => (value && isAbsolute(value) ? value : undefined);
  const explicit = absolute(env.UV_CONFIG_FILE);
  if (explicit) return [explicit];
  const files: string[] = [];
  const xdg = absolute(env.XDG_CONFIG_HOME);
  const home = absolute(env.HOME);
  if (xdg) files.push(join(xdg, 'uv', 'uv.toml'));
  else if (home) files.push(join(home, '.config', 'uv', 'uv.toml'));
  const dirs = (env.XDG_CONFIG_DIRS ?? '').split(':').filter((dir) => isAbsolute(dir));
  for (const dir of dirs) files.push(join(dir, 'uv', 'uv.toml'));
  files.push('/etc/uv/uv.toml');
  return files;
}

/** A regular file's text (bounded), or undefined when there is none. */
function readConfig(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return undefined;
    if (stat.size > MAX_CONFIG_BYTES) {
      throw new UsageError(
        `uv's config ${path} is larger than ${MAX_CONFIG_BYTES} bytes; mcp-sandbox will not read it`,
      );
    }
    const buffer = Buffer.alloc(stat.size);
    const length = readSync(fd, buffer, 0, stat.size, 0);
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * The default index a uv.toml names: `[[index]]` with `default = true`, else the top-level
 * `index-url`. Only the few lines that matter are read: a line of the top level or of an
 * `[[index]]` table that names an index but cannot be read plainly, a multi-line string (which
 * could hide such a line), or extra indexes (an install from one index only cannot honour them)
 * make a refusal that says to set UV_DEFAULT_INDEX, never a silent guess.
 */
export function indexOfConfig(text: string, file: string): string | undefined {
  const refuse = (why: string) =>
    new UsageError(
      `mcp-sandbox cannot take the Python index from ${file}: ${why}. ` +
        'Set UV_DEFAULT_INDEX to the one index uvx servers install from (or pass it with --env-file / the client config)',
    );
  if (text.includes('"""') || text.includes("'''")) throw refuse('it has a multi-line string');
  let table = '';
  let topLevel: string | undefined;
  let current: { url?: string; isDefault?: boolean; explicit?: boolean } | undefined;
  const indexes: Array<NonNullable<typeof current>> = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const header = /^(\[\[?)\s*([A-Za-z0-9_.-]+)\s*\]\]?\s*(?:#.*)?$/.exec(line);
    if (header) {
      table = `${header[1]}${header[2]}`;
      current = table === '[[index' ? {} : undefined;
      if (current) indexes.push(current);
      continue;
    }
    if (line.startsWith('[')) {
      if (/index/.test(line)) throw refuse(`its table ${JSON.stringify(line.slice(0, 60))} is not plain`);
      table = 'other';
      current = undefined;
      continue;
    }
    const kv = /^([A-Za-z0-9_-]+)\s*=\s*(.*)$/.exec(line);
    const key = kv?.[1];
    const value = kv?.[2] ?? '';
    const ours = table === '' || current !== undefined;
    if (!ours) continue;
    if (!kv || key === undefined) {
      if (/index/.test(line)) throw refuse(`the line ${JSON.stringify(line.slice(0, 60))} is not plain`);
      continue;
    }
    if (table === '' && (key === 'extra-index-url' || key === 'find-links')) {
      throw refuse(`it sets ${key}: uvx servers install from one index`);
    }
    if (table === '' && key === 'index-url')
      topLevel = tomlString(value) ?? throwIt(refuse(`its ${key} is not a plain string`));
    if (table === '' && key === 'index') throw refuse('it gives `index` inline');
    if (current && key === 'url')
      current.url = tomlString(value) ?? throwIt(refuse('an [[index]] url is not a plain string'));
    if (current && key === 'default')
      current.isDefault = tomlBool(value) ?? throwIt(refuse('an [[index]] default is not true or false'));
    if (current && key === 'explicit')
      current.explicit = tomlBool(value) ?? throwIt(refuse('an [[index]] explicit is not true or false'));
  }
  const defaults = indexes.filter((index) => index.isDefault === true);
  // Explicit indexes serve only packages pinned to them in a project: a tool install never uses them.
  const extras = indexes.filter((index) => index.isDefault !== true && index.explicit !== true);
  if (defaults.length > 1) throw refuse('it marks more than one [[index]] as the default');
  if (extras.length > 0)
    throw refuse('it lists an [[index]] that is not the default: uvx servers install from one index');
  const chosen = defaults[0];
  if (chosen && chosen.url === undefined) throw refuse('its default [[index]] has no url');
  return chosen?.url ?? topLevel;
}

function throwIt(error: Error): never {
  throw error;
}

/** A TOML basic or literal string on one line, with an optional comment after it. */
function tomlString(value: string): string | undefined {
  const basic = /^"((?:[^"\\]|\\["\\/bfnrt])*)"\s*(?:#.*)?$/.exec(value);
  if (basic) return JSON.parse(`"${basic[1]}"`) as string;
  const literal = /^'([^']*)'\s*(?:#.*)?$/.exec(value);
  return literal?.[1];
}

function tomlBool(value: string): boolean | undefined {
  const match = /^(true|false)\s*(?:#.*)?$/.exec(value);
  return match ? match[1] === 'true' : undefined;
}
