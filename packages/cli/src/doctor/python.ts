import { posix, win32 } from 'node:path';
import type { CheckResult, DoctorCheck, DoctorHost, ProgramCandidate } from './types.js';

/**
 * What doctor says about Python servers: uv and its version, the Pythons a uvx server can use
 * (the python3 on PATH the install step makes environments with, and uv's managed ones) and the
 * user's uv cache. uv and Python are found as the install step finds them, and run only when no
 * sandbox could have written them (see `ProgramCandidate.writable`), from `/` and without uv's
 * project configuration: the working folder's uv.toml or pyproject.toml choose nothing here.
 */
export interface FoundUv {
  /** The uv to ask, by its real path; undefined when none may be run. */
  readonly uv?: string;
  readonly version?: string;
  /** Candidates not run, with why a sandbox could have written them. */
  readonly notRun: readonly ProgramCandidate[];
}

const SAFE_CWD = '/';
const VERSION = /^uv (\d{1,4}\.\d{1,4}\.\d{1,4}[0-9A-Za-z.+-]{0,32})(?:\s|$)/;
const PYTHON_VERSION = /^\d{1,2}\.\d{1,3}\.\d{1,3}$/;
/** uv's managed Python folders: `cpython-3.12.7-linux-x86_64-gnu`, `pypy-3.10.14-…`. */
const MANAGED = /^(cpython|pypy|graalpy)-(\d{1,2}\.\d{1,3}\.\d{1,3}[a-z0-9]{0,8})(?:[+-]|$)/;
const ISOLATED = ['-I', '-c'];

function run(host: DoctorHost, file: string, args: readonly string[]) {
  return host.exec(file, args, { cwd: SAFE_CWD });
}

/**
 * uv as the install step finds it: a native `uv` on PATH, else the one the `uv` package of the
 * `python3` on PATH ships (`pip install uv` behind a version manager's shim). Memoized per host.
 */
export function uvLocator(host: DoctorHost): () => Promise<FoundUv> {
  let found: Promise<FoundUv> | undefined;
  return () => {
    found ??= locate(host);
    return found;
  };
}

async function locate(host: DoctorHost): Promise<FoundUv> {
  if (!host.programs) return { notRun: [] };
  const notRun: ProgramCandidate[] = [];
  let uv: string | undefined;
  for (const candidate of await host.programs('uv')) {
    if (candidate.writable) notRun.push(candidate);
    else if (candidate.native && uv === undefined) uv = candidate.real;
  }
  if (uv === undefined) {
    for (const python of await host.programs('python3')) {
      if (python.writable) {
        notRun.push(python);
        continue;
      }
      const said = await run(host, python.real, [...ISOLATED, 'import uv; print(uv.find_uv_bin())']);
      const path = said.code === 0 ? said.stdout.trim() : '';
      const facts = posix.isAbsolute(path) ? await host.fileFacts?.(path) : undefined;
      if (facts?.native && !facts.writable) uv = facts.real;
      else if (facts?.writable) notRun.push(facts);
      break;
    }
  }
  if (uv === undefined) return { notRun };
  const said = await run(host, uv, ['--version']);
  const version = said.code === 0 ? VERSION.exec(said.stdout.trim())?.[1] : undefined;
  return { uv, ...(version ? { version } : {}), notRun };
}

function notRunText(found: FoundUv): string {
  if (found.notRun.length === 0) return '';
  const list = found.notRun.map((c) => `${c.path} (${c.writable})`).join(', ');
  return `; not run, as a sandbox could have written them: ${list}`;
}

export function uvCheck(find: () => Promise<FoundUv>): DoctorCheck {
  return {
    id: 'uv',
    run: async (): Promise<CheckResult> => {
      const found = await find();
      const notRun = notRunText(found);
      if (found.uv === undefined) {
        return {
          status: found.notRun.length > 0 ? 'warn' : 'info',
          title: 'uv',
          summary: `not found: uvx servers need it${notRun}`,
          fix: 'pip install uv (or see https://docs.astral.sh/uv/), then make it the "uv" on your PATH',
        };
      }
      return {
        status: found.notRun.length > 0 ? 'warn' : 'ok',
        title: 'uv',
        summary: `${found.version ?? 'unknown version'} at ${found.uv}${notRun}`,
        ...(found.notRun.length > 0
          ? { fix: 'take the folders named off PATH: your own shell runs what lies there first' }
          : {}),
      };
    },
  };
}

/** The python3 environments are made with, and uv's managed Pythons (read from their folder). */
export function pythonCheck(host: DoctorHost, find: () => Promise<FoundUv>): DoctorCheck {
  return {
    id: 'python',
    run: async (): Promise<CheckResult> => {
      const title = 'Python for uvx servers';
      let system: string | undefined;
      for (const python of (await host.programs?.('python3')) ?? []) {
        if (python.writable || !python.native) continue;
        const said = await run(host, python.real, [
          ...ISOLATED,
          'import sys; print("%d.%d.%d" % sys.version_info[:3])',
        ]);
        const version = said.code === 0 ? said.stdout.trim() : '';
        if (PYTHON_VERSION.test(version)) system = `${version} at ${python.real}`;
        break;
      }
      const managed = await managedPythons(host, await find());
      const summary = `${system ?? 'no python3 on PATH'}; uv-managed: ${managed}`;
      return system
        ? { status: 'ok', title, summary }
        : {
            status: 'info',
            title,
            summary,
            fix: 'install a Python 3 (your system package manager) and make it the "python3" on your PATH',
          };
    },
  };
}

async function managedPythons(host: DoctorHost, found: FoundUv): Promise<string> {
  if (found.uv === undefined) return 'unknown (no uv)';
  const said = await run(host, found.uv, ['--no-config', 'python', 'dir']);
  const dir = said.code === 0 ? said.stdout.trim() : '';
  if (!posix.isAbsolute(dir) && !win32.isAbsolute(dir)) return 'unknown';
  const names = (await host.listDir?.(dir)) ?? [];
  const versions = names.flatMap((name) => {
    const match = MANAGED.exec(name);
    return match ? [`${match[1] === 'cpython' ? '' : `${match[1]} `}${match[2]}`] : [];
  });
  return versions.length > 0 ? `${versions.join(', ')} (in ${dir})` : `none (in ${dir})`;
}

/** The user's uv cache: `UV_CACHE_DIR`, else uv's own answer without project configuration. */
export async function uvCacheDir(host: DoctorHost, find: () => Promise<FoundUv>): Promise<string> {
  const path = host.platform === 'win32' ? win32 : posix;
  const set = host.env.UV_CACHE_DIR;
  if (set && path.isAbsolute(set)) return set;
  const found = await find();
  if (found.uv !== undefined) {
    const said = await run(host, found.uv, ['--no-config', 'cache', 'dir']);
    const dir = said.code === 0 ? said.stdout.trim() : '';
    if (path.isAbsolute(dir) && !dir.includes('\n')) return dir;
  }
  const home = (host.platform === 'win32' ? host.env.USERPROFILE : host.env.HOME) ?? '';
  return host.platform === 'win32'
    ? path.join(host.env.LOCALAPPDATA ?? path.join(home, 'AppData', 'Local'), 'uv', 'cache')
    : path.join(host.env.XDG_CACHE_HOME || path.join(home, '.cache'), 'uv');
}
