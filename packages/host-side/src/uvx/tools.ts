import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { SandboxFailureError } from '@mcpsandbox/core';
import { type Bind, commandBinds, hiddenRoots } from '../view.js';
import { isElf } from './elf.js';
import type { PythonChoice, PythonNeed } from './managed-pythons.js';

/** The host's uv and Python as the install step and the server see them (read-only). */
export interface UvTools {
  /** uv's real binary (never a version manager's shim script). */
  readonly uv: string;
  /** The interpreter the environment is made with: a real binary of the host's. */
  readonly python: string;
  /** `major.minor.micro` of that interpreter. */
  readonly pythonVersion: string;
  /** What of hidden directories (the home) must be bound read-only for both to run. */
  readonly binds: readonly Bind[];
}

type Env = Readonly<Record<string, string | undefined>>;

function onPath(names: readonly string[], env: Env): string[] {
  const found: string[] = [];
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    for (const name of names) {
      try {
        const real = realpathSync(join(dir, name));
        if (isElf(real) && !found.includes(real)) found.push(real);
      } catch {
        // not here
      }
    }
  }
  return found;
}

/**
 * Asks a host Python for one short line: isolated (`-I`: neither the working folder nor PYTHON*
 * variables on its path, where a server's rw mount could have put a `uv.py`) and run from `/`.
 */
function ask(file: string, code: string, env: Env): string | undefined {
  try {
    const out = execFileSync(file, ['-I', '-c', code], {
      cwd: '/',
      env: { PATH: env.PATH ?? '/usr/bin:/bin', HOME: env.HOME ?? '/' },
      encoding: 'utf8',
      timeout: 10_000,
      maxBuffer: 64 * 1024,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return out.trim();
  } catch {
    return undefined;
  }
}

/**
 * uv's binary: an ELF `uv` on PATH, else the one the `uv` Python package on PATH ships (pip's
 * `uv` behind a pyenv shim). The Python: the first real `python3` on PATH (shims skipped), with
 * its version. Nothing here is read from the working folder.
 */
export function findUvTools(env: Env): UvTools {
  let uv = onPath(['uv'], env)[0];
  if (uv === undefined) {
    const said = ask('python3', 'import uv; print(uv.find_uv_bin())', env);
    if (said && isAbsolute(said) && isElf(said)) uv = realpathSync(said);
  }
  if (uv === undefined) {
    throw new SandboxFailureError(
      'uvx servers need uv on the host, and none was found on PATH; install it (pip install uv, or see https://docs.astral.sh/uv/)',
      { code: 'E_PREPARE' },
    );
  }
  let python: string | undefined;
  let pythonVersion: string | undefined;
  for (const candidate of onPath(['python3'], env)) {
    const said = ask(candidate, 'import sys; print("%d.%d.%d" % sys.version_info[:3])', env);
    if (said && /^\d{1,2}\.\d{1,3}\.\d{1,3}$/.test(said)) {
      python = candidate;
      pythonVersion = said;
      break;
    }
  }
  if (python === undefined || pythonVersion === undefined) {
    throw new SandboxFailureError(
      'uvx servers run with a Python the host already has, and no python3 was found on PATH; install one (uv python install 3.12, or your system package manager)',
      { code: 'E_PREPARE' },
    );
  }
  const roots = hiddenRoots(env.HOME);
  const binds = [...commandBinds(uv, roots).binds, ...commandBinds(python, roots).binds];
  return { uv, python, pythonVersion, binds };
}

/** The same tools with another Python (a uv-managed one), and what of the home it needs bound. */
export function withPython(tools: UvTools, choice: PythonChoice, env: Env): UvTools {
  const roots = hiddenRoots(env.HOME);
  const binds = [...commandBinds(tools.uv, roots).binds, ...commandBinds(choice.python, roots).binds];
  return { uv: tools.uv, python: choice.python, pythonVersion: choice.pythonVersion, binds };
}

/** What uv's refusal for want of a Python (`requires-python`) asks for; undefined for anything else. */
export function pythonRequirement(output: string): PythonNeed | undefined {
  const match = /Python\s*(>=|>|~=|==)\s*(\d+(?:\.\d+){0,2})/.exec(output);
  if (
    !match ||
    !/requires-python|requires Python|current Python version|does not satisfy Python/i.test(output)
  )
    return undefined;
  return { op: match[1] as PythonNeed['op'], version: match[2] ?? '' };
}

/**
 * uv's refusal for want of a Python: which version the package needs, and the one command that
 * installs it (a uv-managed Python is then used by the next start). Undefined for anything else.
 */
export function pythonNeeded(output: string, have: string): string | undefined {
  const need = pythonRequirement(output);
  if (!need) return undefined;
  const [major, minor] = need.version.split('.');
  const wanted = need.op === '>' ? `${major}.${Number(minor ?? 0) + 1}` : `${major}.${minor ?? 0}`;
  return (
    `the package needs Python ${need.op}${need.version}, and the host's Python is ${have} ` +
    `(no uv-managed Python fits either); install one (uv python install ${wanted}), then start again`
  );
}
