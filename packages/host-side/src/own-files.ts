import { existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { type Bind, isHidden, isInside } from './view.js';

/** Programs whose first argument is the server's code. Any other program's arguments are its data. */
const INTERPRETERS = new Set(['node', 'nodejs', 'deno', 'bun', 'tsx', 'ts-node', 'python', 'python3']);

/** Where credentials live: never shown, whatever the command line says. */
const SECRET_DIRS = new Set([
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.kube',
  '.docker',
  '.password-store',
  '.netrc',
]);

export interface OwnFiles {
  /** The command with the server's own file made absolute (the sandbox starts in its own home). */
  readonly command: readonly string[];
  /** Read-only binds of each file's package root, at the same path. */
  readonly binds: readonly Bind[];
  /** Files not shown because their path passes through a tree a sandbox can write. */
  readonly skipped: readonly string[];
}

/**
 * The server's own files: when the command is a path to a host file the sandbox would hide, or it
 * is an interpreter whose first argument is (`node ./build/index.js`), that file's package root
 * (the nearest directory with a package.json, else the file's own directory) is shown read-only at
 * the same path. Never wider: a package root that is a hidden root itself or the user's home falls
 * back to the file's directory, and nothing under a credentials directory (`~/.ssh`) is shown.
 * Other programs' arguments are data, and stay hidden (`cat ~/secret` shows nothing).
 */
export function ownFiles(
  command: readonly string[],
  cwd: string,
  roots: readonly string[],
  hostHome: string | undefined,
  writable: readonly string[] = [],
): OwnFiles {
  const out = [...command];
  const binds: Bind[] = [];
  const skipped: string[] = [];
  const writableReal = [...new Set(writable.flatMap((dir) => [dir, realOrSelf(dir)]))];
  const program = basename(command[0] ?? '');
  const script = command[1] !== undefined && !command[1].startsWith('-') && INTERPRETERS.has(program);
  const candidates = script ? [0, 1] : [0];
  for (const index of candidates) {
    const word = command[index] as string;
    // A bare name is looked up on PATH; only a path names a file of the user's.
    if (!word.includes('/')) continue;
    const file = resolve(cwd, word);
    if (!isHidden(file, roots) || !isFile(file) || file.split('/').some((part) => SECRET_DIRS.has(part))) {
      continue;
    }
    // A sandbox could have swapped a folder on the way for a link (bwrap's --ro-bind would
    // follow it to a hidden directory): nothing on such a path is shown.
    if (passesThrough(file, writableReal)) {
      skipped.push(file);
      continue;
    }
    out[index] = file;
    const root = packageRoot(file, roots, hostHome);
    if (!binds.some((b) => isInside(root, b.source))) binds.push({ source: root, dest: root, mode: 'ro' });
  }
  return { command: out, binds, skipped };
}

function packageRoot(file: string, roots: readonly string[], hostHome: string | undefined): string {
  const own = dirname(file);
  const tooWide = (dir: string) => roots.includes(dir) || dir === hostHome || !isHidden(dir, roots);
  for (let dir = own; !tooWide(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) break;
  }
  return tooWide(own) ? file : own;
}

function isFile(path: string): boolean {
  try {
    return isAbsolute(path) && statSync(path).isFile();
  } catch {
    return false;
  }
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Link hops before a path counts as passing through a writable tree (as the kernel's 40). */
const MAX_HOPS = 40;

/**
 * Whether resolving `path` (as the kernel would, link by link) looks at any entry inside one of
 * `writable` (real paths): the entries a sandbox can change. A path that never does is made
 * only of entries the sandbox cannot touch, so what it names cannot be swapped under the host.
 */
export function passesThrough(path: string, writable: readonly string[]): boolean {
  const pending = path.split('/');
  let real = '/';
  let hops = 0;
  for (let name = pending.shift(); name !== undefined; name = pending.shift()) {
    if (name === '' || name === '.') continue;
    if (name === '..') {
      real = dirname(real);
      continue;
    }
    const next = join(real, name);
    if (writable.some((dir) => isInside(next, dir))) return true;
    let link: string | undefined;
    try {
      link = lstatSync(next).isSymbolicLink() ? readlinkSync(next) : undefined;
    } catch {
      return false;
    }
    if (link === undefined) {
      real = next;
      continue;
    }
    if (++hops > MAX_HOPS) return true;
    if (link.startsWith('/')) real = '/';
    pending.unshift(...link.split('/'));
  }
  return false;
}
