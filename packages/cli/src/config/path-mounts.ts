import { statSync } from 'node:fs';
import { posix } from 'node:path';

/** Servers that write under the paths they are given: their path arguments are mounted read-write. */
const WRITING_SERVERS: readonly RegExp[] = [
  /^@modelcontextprotocol\/server-filesystem(@[^/]+)?$/,
  /^mcp-server-filesystem(@[^/]+)?$/,
];

/** Interpreters whose first argument is the server's own code: `run` makes that visible itself. */
const INTERPRETERS = new Set(['node', 'nodejs', 'deno', 'bun', 'tsx', 'ts-node', 'python', 'python3']);

export interface PathMount {
  readonly path: string;
  readonly mode: 'ro' | 'rw';
}

/**
 * The host paths a server entry passes as arguments (`/home/me/notes`, `--root=/srv/data`) that
 * exist here, each to be mounted at the same path so the sandboxed server finds what its config
 * names. Read-only unless the server is one known to write there or `rw` is asked for. `/` is
 * never mounted: a config that names it grants everything, which a sandbox cannot mean.
 */
export function pathMountsFor(
  argv: readonly string[],
  options: { rw?: boolean; exists?: (path: string) => boolean } = {},
): PathMount[] {
  const exists = options.exists ?? hostPathExists;
  const writes = argv.some((word) => WRITING_SERVERS.some((re) => re.test(word)));
  const mode = options.rw || writes ? 'rw' : 'ro';
  const command = posix.basename(argv[0] ?? '');
  const skipFirst = INTERPRETERS.has(command);
  const seen = new Set<string>();
  const out: PathMount[] = [];
  argv.forEach((word, index) => {
    if (index === 0 || (skipFirst && index === 1)) return;
    const eq = word.startsWith('-') ? word.indexOf('=') : -1;
    const candidate = eq === -1 ? word : word.slice(eq + 1);
    // `--mount host:inside:mode` cannot spell a path with a colon in it.
    if (!posix.isAbsolute(candidate) || candidate.includes(':')) return;
    const path = posix.normalize(candidate).replace(/(.)\/$/, '$1');
    if (path === '/' || seen.has(path) || !exists(path)) return;
    seen.add(path);
    out.push({ path, mode });
  });
  return out;
}

function hostPathExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
