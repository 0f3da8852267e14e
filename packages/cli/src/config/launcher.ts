import { closeSync, constants, fstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, posix, resolve, sep } from 'node:path';
import { installedFromRegistry } from './install-origin.js';

/**
 * What starts mcp-sandbox in a client's config, checked: either the published package at an exact
 * version (`npx -y mcp-sandbox@1.2.3`), or a file on this machine that is the `mcp-sandbox` bin of
 * an installed or built `mcp-sandbox` package (started directly, or by node). Nothing else counts:
 * an entry whose launcher merely looks like one claims to be sandboxed and is not.
 */
export type Launcher =
  | { readonly kind: 'npx'; readonly version: string; readonly argv: readonly string[] }
  | { readonly kind: 'binary'; readonly bin: string; readonly argv: readonly string[] }
  /** Windows: `wsl.exe -e mcp-sandbox`, the mcp-sandbox installed inside WSL2 (see wsl.ts). */
  | { readonly kind: 'wsl'; readonly argv: readonly string[] };

/** The launcher wrap writes on Windows, exactly: WSL's own mcp-sandbox, started with no shell. */
export const WSL_LAUNCHER: readonly string[] = ['wsl.exe', '-e', 'mcp-sandbox'];

/** What checking a launcher depends on. */
export interface LauncherContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** For a project-scoped config: its project folder, which the repository's author wrote. */
  readonly projectRoot?: string;
}

/** An exact semantic version, as npm publishes it: no ranges, tags, URLs or paths. */
const EXACT_VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
const NODE = /^node(\.exe)?$/i;
/** A package.json larger than this is not one we wrote. */
const MAX_PACKAGE_JSON = 1 << 20;

export function npxLauncher(version: string): Launcher | undefined {
  if (!EXACT_VERSION.test(version)) return undefined;
  return { kind: 'npx', version, argv: ['npx', '-y', `mcp-sandbox@${version}`] };
}

/** The launcher words of an entry (everything before `run`), or undefined when not one of ours. */
export function checkLauncher(words: readonly string[], ctx: LauncherContext): Launcher | undefined {
  const [command = '', ...rest] = words;
  if (command === 'npx' && rest.length === 2 && (rest[0] === '-y' || rest[0] === '--yes')) {
    const match = /^mcp-sandbox@(.+)$/.exec(rest[1] ?? '');
    const launcher = match ? npxLauncher(match[1] as string) : undefined;
    return launcher ? { ...launcher, argv: [...words] } : undefined;
  }
  if (words.length === WSL_LAUNCHER.length && words.every((word, i) => word === WSL_LAUNCHER[i])) {
    return { kind: 'wsl', argv: [...words] };
  }
  let program: string | undefined;
  if (rest.length === 0) program = command;
  else if (rest.length === 1 && NODE.test(posix.basename(command.replace(/\\/g, '/')))) {
    if (!isAbsolute(command) && command !== 'node' && command !== 'node.exe') return undefined;
    program = rest[0];
  }
  if (program === undefined) return undefined;
  const bin = resolveProgram(program, ctx);
  return bin && isMcpSandboxBin(bin, ctx) ? { kind: 'binary', bin, argv: [...words] } : undefined;
}

/** Absolute paths as they are, bare names through PATH; relative paths depend on the client's cwd. */
function resolveProgram(program: string, ctx: LauncherContext): string | undefined {
  if (isAbsolute(program)) return realOrUndefined(program);
  if (program.includes('/') || program.includes('\\')) return undefined;
  for (const dir of (ctx.env.PATH ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const found = realOrUndefined(join(dir, program));
    if (found) return found;
  }
  return undefined;
}

function realOrUndefined(path: string): string | undefined {
  try {
    const real = realpathSync(path);
    return statSync(real).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when `file` (a real path) is what the nearest package.json above it names as its
 * `mcp-sandbox` bin, that package is `mcp-sandbox`, and it does not lie in a project folder
 * (whose author could have written that package.json too).
 */
function isMcpSandboxBin(file: string, ctx: LauncherContext): boolean {
  if (ctx.projectRoot !== undefined) {
    const project = realOrSelf(ctx.projectRoot);
    if (file === project || file.startsWith(project.endsWith(sep) ? project : project + sep)) return false;
  }
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = readPackageJson(join(dir, 'package.json'));
    if (manifest !== undefined) {
      if (manifest.name !== 'mcp-sandbox') return false;
      const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.['mcp-sandbox'];
      return typeof bin === 'string' && realOrUndefined(resolve(dir, bin)) === file;
    }
    if (dirname(dir) === dir) return false;
  }
}

interface Manifest {
  readonly name?: unknown;
  readonly version?: unknown;
  readonly bin?: string | Record<string, unknown>;
}

/** A package.json as a regular file of bounded size, not followed through a link; else undefined. */
export function readPackageJson(path: string): Manifest | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_PACKAGE_JSON) return {};
    const bytes = Buffer.alloc(stat.size);
    readSync(fd, bytes, 0, stat.size, 0);
    const value = JSON.parse(bytes.toString('utf8')) as unknown;
    return value && typeof value === 'object' ? (value as Manifest) : {};
  } catch {
    return {};
  } finally {
    closeSync(fd);
  }
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** The running mcp-sandbox: the node that runs it and its bin script. */
export interface SelfBinary {
  readonly node: string;
  readonly script: string;
}

/**
 * The launcher for the running binary: `npx -y mcp-sandbox@<version>` when it runs from a package
 * npm installed from a registry at that very version (its lockfile says so, see
 * `installedFromRegistry`), else its own absolute paths, with the reason: a source build, or a
 * tarball installed by path, is a version the registry may not have, or has as other code.
 */
export function selfLauncher(self: SelfBinary, version: string): { launcher: string[]; note?: string } {
  const script = realOrSelf(self.script);
  const parts = script.split(sep);
  const at = parts.lastIndexOf('node_modules');
  if (at !== -1 && parts[at + 1] === 'mcp-sandbox') {
    const manifest = readPackageJson(join(parts.slice(0, at + 2).join(sep), 'package.json'));
    if (
      manifest?.name === 'mcp-sandbox' &&
      manifest.version === version &&
      npxLauncher(version) &&
      installedFromRegistry(parts.slice(0, at).join(sep) || sep, version)
    ) {
      return { launcher: ['npx', '-y', `mcp-sandbox@${version}`] };
    }
  }
  return {
    launcher: [self.node, script],
    note: `this mcp-sandbox ${version} was not installed from a registry, so entries start it by its path (${self.node} ${script}); pass --launcher npx to use the published package`,
  };
}
