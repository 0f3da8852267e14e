/**
 * Everything the host's npm reads to answer `npm config get`, as one digest: the same digest
 * means the same answer, so a start need not run npm again (it costs a start 300–400 ms).
 *
 * The inputs are a superset of what npm consults, chosen so that a change anywhere npm looks
 * changes the digest: the variables npm reads (every `npm_config_*`, the homes, the prefixes),
 * which npm and which node run, and every config file npm could load — the user's, the global
 * and npm's own, and only when the user opted into a project's config (`--project-npmrc`) the
 * `.npmrc`, `package.json` and `node_modules` of the working directory and each of its
 * ancestors (where npm looks for the project, workspaces included) — with every variable those
 * files name as `${VAR}`. Without the opt-in npm is asked with `--location=global`, which loads
 * no project config: a folder a sandbox may write never decides the registry or the cache.
 * Files are read as npm would (following links), but never block: anything that is not a
 * small regular file makes the inputs unknown, and an unknown input is never answered from the
 * store.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { locateCommand } from '../view.js';

/** Larger config files are not fingerprinted (npm is asked each time). */
const MAX_FILE_BYTES = 1 << 20;

/** The variables npm's config reads besides `npm_config_*` (homes, prefixes, its options). */
const NPM_VARIABLES = [
  'HOME',
  'PATH',
  'PREFIX',
  'DESTDIR',
  'XDG_CONFIG_HOME',
  'APPDATA',
  'LOCALAPPDATA',
  'USERPROFILE',
  'NODE_OPTIONS',
];

/** `${NAME}` and `${NAME?}` in an npmrc: npm substitutes the variable's value. */
const REFERENCE = /\$\{([^${}?]+)\??\}/g;

export interface NpmConfigInputs {
  /** Salted digest of every input: equal digests, equal answers. */
  readonly digest: string;
  /** The config files npm may load under these inputs (absolute paths). */
  readonly files: ReadonlySet<string>;
}

type Content = Buffer | null;

/**
 * The inputs of `npm config get` run with `hostEnv` in `cwd`, or undefined when one cannot be
 * read for certain (no npm on PATH, a config path that is not a small regular file, …).
 */
export function npmConfigInputs(
  hostEnv: Readonly<Record<string, string | undefined>>,
  cwd: string,
  salt: string,
  project = false,
): NpmConfigInputs | undefined {
  if (!isAbsolute(cwd) || hasControl(cwd)) return undefined;
  const npm = identify(locateCommand('npm', hostEnv.PATH, cwd));
  if (!npm) return undefined;
  const node = identify(locateCommand('node', hostEnv.PATH, cwd));
  const files = new Map<string, Content>();
  const marks: [string, string][] = [];
  for (let dir = cwd; project; dir = dirname(dir)) {
    for (const name of ['.npmrc', 'package.json']) {
      const path = join(dir, name);
      const content = readConfigFile(path);
      if (content === undefined) return undefined;
      files.set(path, content);
    }
    marks.push([dir, entryType(join(dir, 'node_modules'))]);
    if (dirname(dir) === dir) break;
  }
  for (const path of configFiles(hostEnv, npm.real, node?.real)) {
    const content = readConfigFile(path);
    if (content === undefined) return undefined;
    files.set(path, content);
  }
  const referenced = new Set<string>();
  for (const [path, content] of files) {
    if (!content || !path.endsWith('npmrc')) continue;
    for (const match of content.toString('utf8').matchAll(REFERENCE)) referenced.add(match[1] as string);
  }
  const env = Object.entries(hostEnv)
    .filter(([name]) => NPM_VARIABLES.includes(name) || /^npm_/i.test(name) || referenced.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const hash = createHash('sha256').update(salt).update('\0');
  hash.update(JSON.stringify({ format: 2, project, cwd, env, npm, node: node ?? null, marks }));
  for (const [path, content] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    hash.update(`\0${path}\0${content === null ? 'absent' : `${content.length}\0`}`);
    if (content) hash.update(content);
  }
  return { digest: hash.digest('hex'), files: new Set(files.keys()) };
}

/**
 * The user, global and builtin config files npm would load unless a config file moves them
 * (then npm names a file outside this set, and its answer is not stored).
 */
function configFiles(
  hostEnv: Readonly<Record<string, string | undefined>>,
  npmReal: string,
  nodeReal: string | undefined,
): string[] {
  const setting = (name: string) =>
    Object.entries(hostEnv).find(([key]) => key.toLowerCase() === `npm_config_${name}`)?.[1];
  const paths: string[] = [];
  const user = setting('userconfig') ?? (hostEnv.HOME ? join(hostEnv.HOME, '.npmrc') : undefined);
  if (user) paths.push(user);
  const globalConfig = setting('globalconfig');
  if (globalConfig) paths.push(globalConfig);
  const prefixes = [hostEnv.PREFIX, nodeReal ? dirname(dirname(nodeReal)) : undefined];
  for (const prefix of prefixes) {
    if (!prefix) continue;
    paths.push(join(prefix, 'etc', 'npmrc'));
    if (hostEnv.DESTDIR) paths.push(join(hostEnv.DESTDIR, prefix, 'etc', 'npmrc'));
  }
  // npm's own: `<npm>/npmrc`, beside the bin/ directory its command is in.
  paths.push(join(dirname(dirname(npmReal)), 'npmrc'));
  return paths.filter((path) => isAbsolute(path) && !hasControl(path));
}

interface Identity {
  readonly path: string;
  readonly real: string;
  readonly stat: string;
}

/** A command's path, real path and file identity: a replaced npm or node is another input. */
function identify(path: string | undefined): Identity | undefined {
  if (!path || !isAbsolute(path)) return undefined;
  try {
    const real = realpathSync(path);
    const stat = statSync(real);
    return { path, real, stat: `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.mode}` };
  } catch {
    return undefined;
  }
}

/** The file's bytes, null when absent, undefined when it cannot be read for certain. */
function readConfigFile(path: string): Content | undefined {
  // Looked at before it is opened: opening a device can do something.
  try {
    if (!statSync(path).isFile()) return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? null : undefined;
  }
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO or a device planted as a config file must not hang the host.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? null : undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_FILE_BYTES) return undefined;
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      total += n;
      if (total > MAX_FILE_BYTES) return undefined;
      chunks.push(chunk.subarray(0, n));
    }
    return Buffer.concat(chunks);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Whether npm sees the entry (it follows links), and as what. */
function entryType(path: string): string {
  try {
    return statSync(path).isDirectory() ? 'dir' : 'other';
  } catch {
    return 'absent';
  }
}

function hasControl(text: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  return /[\u0000-\u001f\u007f]/.test(text);
}
