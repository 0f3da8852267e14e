/**
 * The user's uv-managed Pythons (`uv python dir`: UV_PYTHON_INSTALL_DIR, else
 * `$XDG_DATA_HOME/uv/python`, else `~/.local/share/uv/python`), offered when the host's python3
 * does not fit a package. Never run on the host: the version is read from the directory's name
 * (`cpython-3.12.1-linux-x86_64-gnu`) and only a sandbox runs the binary. A server given the
 * folder read-write could plant one there, so the folder, each Python's directory and its binary
 * must be the user's own, writable by no one else, and apart from this session's rw mounts.
 */
import { lstatSync, readdirSync, realpathSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';
import { isInside } from '../view.js';
import { isElf } from './elf.js';

export interface PythonChoice {
  readonly python: string;
  /** `major.minor.micro`, from the directory's name. */
  readonly pythonVersion: string;
}

type Env = Readonly<Record<string, string | undefined>>;
const MANAGED = /^cpython-(\d{1,2}\.\d{1,3}\.\d{1,3})-linux-[a-z0-9_]{1,20}-gnu$/;
const MAX_ENTRIES = 200;

/** Where uv installs its Pythons, from absolute settings only; undefined when none is set. */
export function uvPythonDir(env: Env): string | undefined {
  const absolute = (value: string | undefined) =>
    value && isAbsolute(value) && normalize(value) === value ? value : undefined;
  const explicit = absolute(env.UV_PYTHON_INSTALL_DIR);
  if (explicit) return explicit;
  const data = absolute(env.XDG_DATA_HOME);
  if (data) return join(data, 'uv', 'python');
  const home = absolute(env.HOME);
  return home ? join(home, '.local', 'share', 'uv', 'python') : undefined;
}

/** The user's own, not writable by others, a directory (or a file) that is not a symlink. */
function ownedBy(path: string, uid: number, kind: 'dir' | 'file'): boolean {
  try {
    const stat = lstatSync(path);
    const right = kind === 'dir' ? stat.isDirectory() : stat.isFile();
    return right && stat.uid === uid && (stat.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/**
 * The managed CPythons that pass the checks, newest first. `writable`: host paths this session
 * mounts read-write (none of them may hold or contain the folder).
 */
export function managedPythons(env: Env, writable: readonly string[]): PythonChoice[] {
  const dir = uvPythonDir(env);
  const uid = process.getuid?.() ?? 0;
  if (dir === undefined || !ownedBy(dir, uid, 'dir')) return [];
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return [];
  }
  if (real !== dir) return [];
  for (const mount of writable) {
    if (isInside(dir, mount) || isInside(mount, dir)) return [];
  }
  const found: PythonChoice[] = [];
  let names: string[];
  try {
    names = readdirSync(dir).slice(0, MAX_ENTRIES);
  } catch {
    return [];
  }
  for (const name of names) {
    const version = MANAGED.exec(name)?.[1];
    const home = join(dir, name);
    if (version === undefined || !ownedBy(home, uid, 'dir') || !ownedBy(join(home, 'bin'), uid, 'dir'))
      continue;
    const python = join(home, 'bin', 'python3');
    try {
      // `bin/python3` is uv's link to `python3.X` beside it: the real file must stay in there.
      const target = realpathSync(python);
      if (!isInside(target, join(home, 'bin')) || !ownedBy(target, uid, 'file') || !isElf(target)) continue;
    } catch {
      continue;
    }
    found.push({ python, pythonVersion: version });
  }
  return found.sort((a, b) => compareVersions(b.pythonVersion, a.pythonVersion));
}

export function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const diff = (left[i] ?? 0) - (right[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** What a package's `requires-python` asked for, as uv's refusal said it. */
export interface PythonNeed {
  readonly op: '>=' | '>' | '~=' | '==';
  readonly version: string;
}

/** Whether `version` meets `need` (the lower bound uv names; `==` and `~=` by their prefix). */
export function satisfies(version: string, need: PythonNeed): boolean {
  const cmp = compareVersions(version, need.version);
  if (need.op === '>=') return cmp >= 0;
  if (need.op === '>') return cmp > 0;
  const prefix = need.version.split('.').slice(0, need.op === '~=' ? -1 : undefined);
  return cmp >= 0 && version.split('.').slice(0, prefix.length).join('.') === prefix.join('.');
}
