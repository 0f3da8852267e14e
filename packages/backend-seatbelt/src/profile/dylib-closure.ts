import { dirname, join, normalize } from 'node:path';
import { SeatbeltPathError } from '../errors.js';

/** How the closure sees the disk: `otool -L` output and realpath. Tests feed recorded ones. */
export interface ClosureIo {
  readonly otoolL: (path: string) => string;
  readonly realpath: (path: string) => string;
}

export interface DylibClosure {
  /** Real directories of the non-system libraries the runtime loads: read and map. */
  readonly dirs: readonly string[];
  /** Spellings that reach them through a symlink (`/opt/homebrew/opt/icu4c`): read as literals. */
  readonly links: readonly string[];
}

/** Loaded from the dyld shared cache or the system runtime the profile allows anyway. */
const SYSTEM_PREFIXES = ['/usr/lib/', '/System/'];
/** Never part of a runtime: Homebrew's (and any prefix's) data and config trees. */
const DATA_PARTS = new Set(['var', 'etc']);
const MAX_LIBRARIES = 256;

/** The install names one `otool -L` listing gives (every line after the header). */
export function parseOtoolL(output: string): string[] {
  return output
    .split('\n')
    .slice(1)
    .map((line) => /^\s+(.+?) \(compatibility version [^)]*\)\s*$/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined);
}

function resolveName(name: string, loader: string, executable: string): string[] {
  if (name.startsWith('@loader_path/')) return [join(dirname(loader), name.slice(13))];
  if (name.startsWith('@executable_path/')) return [join(dirname(executable), name.slice(17))];
  // LC_RPATH is not read: the layouts that use @rpath keep their libraries beside or in ../lib.
  if (name.startsWith('@rpath/')) {
    const rest = name.slice(7);
    return [join(dirname(loader), rest), join(dirname(loader), '..', 'lib', rest)];
  }
  return name.startsWith('/') ? [normalize(name)] : [];
}

/**
 * The directories a runtime's non-system dylibs live in, found by walking `otool -L` from the
 * binary (Homebrew's node links icu4c, openssl@3, libuv… from /opt/homebrew/opt). A library
 * under a `var` or `etc` directory is refused: those are data, never runtime.
 */
export function dylibClosure(binary: string, io: ClosureIo): DylibClosure {
  const executable = io.realpath(binary);
  const seen = new Set<string>([executable]);
  const queue = [executable];
  const dirs = new Set<string>();
  const links = new Set<string>();
  while (queue.length > 0) {
    const loader = queue.shift() as string;
    for (const name of parseOtoolL(io.otoolL(loader))) {
      if (SYSTEM_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
      const real = firstReal(resolveName(name, loader, executable), io);
      if (real === undefined || seen.has(real.real)) continue;
      if (seen.size >= MAX_LIBRARIES)
        throw new SeatbeltPathError(`${binary} loads more than ${MAX_LIBRARIES} libraries`);
      const parts = real.real.split('/');
      if (parts.some((part) => DATA_PARTS.has(part))) {
        throw new SeatbeltPathError(
          `${binary} loads ${real.real}, under a var or etc directory: refusing to show it`,
        );
      }
      seen.add(real.real);
      queue.push(real.real);
      dirs.add(dirname(real.real));
      for (const link of kegLinks(real.spelled, real.real)) links.add(link);
    }
  }
  return { dirs: [...dirs].sort(), links: [...links].sort() };
}

function firstReal(
  candidates: readonly string[],
  io: ClosureIo,
): { spelled: string; real: string } | undefined {
  for (const spelled of candidates) {
    try {
      return { spelled, real: io.realpath(spelled) };
    } catch {
      // Not there: dyld would try the next one too.
    }
  }
  return undefined;
}

/** The spelled path and each parent of it that is a symlink (its realpath moves). */
function kegLinks(spelled: string, real: string): string[] {
  if (spelled === real) return [];
  const out = [spelled];
  for (let dir = dirname(spelled); dir !== '/' && !real.startsWith(`${dir}/`); dir = dirname(dir))
    out.push(dir);
  return out;
}
