import { realpathSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { pythonStart } from './python-runner.js';

/** Packages that write under the paths they are given: their path arguments are mounted read-write. */
const WRITING_SERVERS: readonly RegExp[] = [
  /^@modelcontextprotocol\/server-filesystem(@[^/]+)?$/,
  /^mcp-server-filesystem(@[^/]+)?$/,
];

/**
 * The same, for PyPI packages (PEP 503 names, as a uvx, `uv tool run` or `pipx run` entry starts
 * them), each checked in the published wheel: mcp-server-git commits, checks out and resets in its
 * `--repository` (mcp_server_git/server.py: git_commit, git_add, git_checkout, git_reset);
 * mcp-server-sqlite creates and writes `--db-path` (mcp_server_sqlite/server.py: sqlite3.connect).
 */
const WRITING_PYTHON_SERVERS: ReadonlySet<string> = new Set(['mcp-server-git', 'mcp-server-sqlite']);

/** Packages that keep data of their own in the sandbox's home, which ends with the session. */
const STATEFUL_SERVERS: readonly RegExp[] = [/^@modelcontextprotocol\/server-memory(@[^/]+)?$/];

/**
 * The same, for PyPI packages: mcp-memory-service keeps its database in ~/.local/share/mcp-memory
 * on Linux (mcp_memory_service/config/base.py: get_base_directory), mcp-atlassian its OAuth tokens
 * in ~/.mcp-atlassian (mcp_atlassian/utils/oauth.py).
 */
const STATEFUL_PYTHON_SERVERS: ReadonlySet<string> = new Set(['mcp-memory-service', 'mcp-atlassian']);

/** Interpreters whose first argument is the server's own code: `run` makes that visible itself. */
const INTERPRETERS = new Set(['node', 'nodejs', 'deno', 'bun', 'tsx', 'ts-node', 'python', 'python3']);
const PACKAGE_RUNNERS = new Set(['npx', 'pnpx', 'bunx', 'uvx']);
/** Options of the runners that take no value; any other option makes the program unknown. */
const RUNNER_FLAGS = new Set(['-y', '--yes', '-q', '--quiet']);

/** Host roots every sandbox hides, and system trees that are never a server's data. */
const HIDDEN_ROOTS = ['/root', '/home', '/tmp', '/var/tmp', '/run', '/var/run', '/mnt', '/media'];
const SYSTEM_TREES = ['/proc', '/sys', '/dev', '/run', '/var/run', '/boot'];
/** Under the home, these hold settings and secrets too (macOS, Windows), though not hidden. */
const HOME_SETTINGS = new Set(['Library', 'AppData']);

export interface PathMount {
  readonly path: string;
  readonly mode: 'ro' | 'rw';
}

export interface RefusedPath {
  readonly path: string;
  readonly reason: string;
}

export interface PathMounts {
  readonly mounts: readonly PathMount[];
  readonly refused: readonly RefusedPath[];
}

export interface PathMountOptions {
  readonly rw?: boolean;
  /** The user's home; nothing of it is carried across but its ordinary folders. */
  readonly home?: string;
  readonly exists?: (path: string) => boolean;
  readonly realpath?: (path: string) => string;
}

/**
 * The program an entry really starts: the package after `npx -y` (`uvx`, `bunx`), or the command
 * itself; undefined for an interpreter's script or a runner with options we do not know.
 */
export function serverProgram(argv: readonly string[]): string | undefined {
  const command = posix.basename((argv[0] ?? '').replace(/\\/g, '/'));
  if (INTERPRETERS.has(command)) return undefined;
  if (!PACKAGE_RUNNERS.has(command)) return command;
  let i = 1;
  while (i < argv.length && RUNNER_FLAGS.has(argv[i] as string)) i++;
  const word = argv[i];
  return word === undefined || word.startsWith('-') ? undefined : word;
}

export function isKnownWriter(argv: readonly string[]): boolean {
  const python = pythonStart(argv);
  if (python) return python.pkg !== undefined && WRITING_PYTHON_SERVERS.has(python.pkg);
  const program = serverProgram(argv);
  return program !== undefined && WRITING_SERVERS.some((re) => re.test(program));
}

export function keepsStateOfItsOwn(argv: readonly string[]): boolean {
  const python = pythonStart(argv);
  if (python) return python.pkg !== undefined && STATEFUL_PYTHON_SERVERS.has(python.pkg);
  const program = serverProgram(argv);
  return program !== undefined && STATEFUL_SERVERS.some((re) => re.test(program));
}

/**
 * The host paths a server entry passes as arguments (`/home/me/notes`, `--root=/srv/data`) that
 * exist here, each to be mounted at the same path so the sandboxed server finds what its config
 * names. Read-only unless the program the entry starts is a known writer or `rw` is asked for.
 * The config may be a stranger's: the home, anything above it, its hidden and settings folders
 * (keys, tokens, shell start-up files, browser profiles, client configs), a hidden root and the
 * system trees are never mounted, whatever the path spells (`..`, a link) — they are `refused`.
 * Relative paths are never mounted: the client resolves them against a folder of its own.
 */
export function pathMountsFor(argv: readonly string[], options: PathMountOptions = {}): PathMounts {
  const exists = options.exists ?? hostPathExists;
  const real = options.realpath ?? realOrSelf;
  const mode = options.rw || isKnownWriter(argv) ? 'rw' : 'ro';
  const skipFirst = INTERPRETERS.has(posix.basename(argv[0] ?? ''));
  const seen = new Set<string>();
  const mounts: PathMount[] = [];
  const refused: RefusedPath[] = [];
  argv.forEach((word, index) => {
    if (index === 0 || (skipFirst && index === 1)) return;
    const eq = word.startsWith('-') ? word.indexOf('=') : -1;
    const candidate = eq === -1 ? word : word.slice(eq + 1);
    // `--mount host:inside:mode` cannot spell a path with a colon in it.
    if (!posix.isAbsolute(candidate) || candidate.includes(':')) return;
    const path = posix.normalize(candidate).replace(/(.)\/$/, '$1');
    if (seen.has(path) || !exists(path)) return;
    seen.add(path);
    const resolved = real(path);
    const reason =
      refusal(path, options.home, real) ??
      (resolved === path ? undefined : linkRefusal(resolved, options.home, real));
    if (reason) refused.push({ path, reason });
    else mounts.push({ path, mode });
  });
  return { mounts, refused };
}

/**
 * Why wrap would never carry the absolute host path `path` into a sandbox (the home, above it, a
 * credentials or settings folder, a hidden root, a system folder; also through a link), or
 * undefined: the same check `pathMountsFor` makes, for paths a config entry already names.
 */
export function hostPathRefusal(
  path: string,
  home: string | undefined,
  real: (path: string) => string = realOrSelf,
): string | undefined {
  const normal = posix.normalize(path).replace(/(.)\/$/, '$1');
  const resolved = real(normal);
  return refusal(normal, home, real) ?? (resolved === normal ? undefined : linkRefusal(resolved, home, real));
}

function linkRefusal(resolved: string, home: string | undefined, real: (p: string) => string) {
  const reason = refusal(resolved, home, real);
  return reason ? `links to ${resolved}: ${reason}` : undefined;
}

/** Why `path` (absolute, normalized) is never mounted by wrap, or undefined. */
function refusal(path: string, home: string | undefined, real: (p: string) => string): string | undefined {
  if (path === '/') return 'the root folder';
  for (const h of homes(home, real)) {
    if (path === h) return 'the home folder';
    if (isInside(h, path)) return 'a folder above the home';
    if (isInside(path, h)) {
      const first = path.slice(h.length + 1).split('/')[0] ?? '';
      if (first.startsWith('.') || HOME_SETTINGS.has(first)) return 'a credentials or settings folder';
    }
  }
  if (HIDDEN_ROOTS.includes(path)) return 'a hidden root';
  if (SYSTEM_TREES.some((root) => isInside(path, root))) return 'a system folder';
  return undefined;
}

function homes(home: string | undefined, real: (p: string) => string): string[] {
  if (!home || !posix.isAbsolute(home)) return [];
  const normal = posix.normalize(home).replace(/(.)\/$/, '$1');
  return [...new Set([normal, real(normal)])].filter((h) => h !== '/');
}

function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function hostPathExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
