import { SeatbeltPathError } from '../errors.js';
import { hasControl } from '../sbpl/literal.js';

/**
 * Everything one process of a session is shown, as host paths. The profile is generated from
 * this alone; the kernel sees it as `sandbox-exec -p <profile>`.
 */
export interface SeatbeltPlan {
  /** Tags every denial in the unified log as this session's: `[A-Za-z0-9_-]{1,64}`. */
  readonly tag: string;
  /** The process's home (private, `--state`, or an install step's throwaway one): read-write. */
  readonly home: string;
  /** The session's private tmp: read-write. */
  readonly tmp: string;
  /** The command, its interpreter and the node that runs `#!/usr/bin/env node`: read-only. */
  readonly runtime: readonly string[];
  /** Directories of the runtime's dylib closure (see dylib-closure.ts): read-only. */
  readonly dylibDirs: readonly string[];
  /** Symlinks on the way to the runtime and its libraries (`/opt/homebrew/opt/icu4c`): stat and readlink only. */
  readonly runtimeLinks?: readonly string[];
  /** The server's installed package and `ro` mounts: read-only. */
  readonly readOnly: readonly string[];
  /** `rw` mounts, the writable package copy, an install step's prefix. */
  readonly readWrite: readonly string[];
  /** TLS trust files the trust variables name: read-only. */
  readonly trustFiles: readonly string[];
  /** The egress proxy's loopback port; undefined: no network at all. */
  readonly proxyPort?: number;
}

const SYMLINKED_ROOTS: readonly (readonly [string, string])[] = [
  ['/var', '/private/var'],
  ['/tmp', '/private/tmp'],
  ['/etc', '/private/etc'],
];

/**
 * The spelling Seatbelt checks for `path`, or a SeatbeltPathError. Seatbelt compares resolved
 * paths, so /var, /tmp and /etc become their /private targets. Paths reach the profile from
 * mounts and package locations, which an attacker can choose: only absolute, normal paths
 * without control characters are carried; the firmlink spelling is refused because the
 * profile denies it last (use the plain one).
 */
export function profilePath(path: string, what: string): string {
  if (hasControl(path)) {
    throw new SeatbeltPathError(
      `${what} ${JSON.stringify(path)} has a control character: it cannot be shown on macOS`,
    );
  }
  if (!path.startsWith('/'))
    throw new SeatbeltPathError(`${what} ${JSON.stringify(path)} is not an absolute path`);
  const parts = path.split('/').slice(1);
  if (path !== '/' && parts.some((part) => part === '' || part === '.' || part === '..')) {
    throw new SeatbeltPathError(
      `${what} ${JSON.stringify(path)} is not a normal path (empty, "." or ".." part)`,
    );
  }
  for (const [link, target] of SYMLINKED_ROOTS) {
    if (path === link || path.startsWith(`${link}/`)) return target + path.slice(link.length);
  }
  if (path === '/System/Volumes/Data' || path.startsWith('/System/Volumes/Data/')) {
    const plain = path.slice('/System/Volumes/Data'.length) || '/';
    throw new SeatbeltPathError(
      `${what} ${JSON.stringify(path)} uses the data volume's firmlink spelling, which the profile denies: use ${JSON.stringify(plain)}`,
    );
  }
  return path;
}

/** Every ancestor of `path` (not the path itself), from `/` down. */
export function ancestors(path: string): string[] {
  const out: string[] = [];
  let at = path.lastIndexOf('/');
  while (at > 0) {
    out.unshift(path.slice(0, at));
    at = path.lastIndexOf('/', at - 1);
  }
  if (path !== '/') out.unshift('/');
  return out;
}

export function checkTag(tag: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(tag))
    throw new SeatbeltPathError(`session tag ${JSON.stringify(tag)} is not [A-Za-z0-9_-]{1,64}`);
  return tag;
}
