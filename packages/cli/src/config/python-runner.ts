import { posix } from 'node:path';
import { PYTHON_NAME, PYTHON_VERSION } from '@mcpsandbox/core';

/**
 * A config entry that starts a Python package through a runner: `uvx …`, `uv tool run …` or
 * `pipx run …`, read the way mcp-sandbox's install step reads a uvx start (host-side's
 * `parseUvxCommand`): the same options, the same refusals. Only what the entry says is read here;
 * nothing is run and no file is opened.
 */
export interface PythonStart {
  readonly runner: 'uvx' | 'uv tool run' | 'pipx run';
  /** The distribution, PEP 503-normalized (`mcp_server_git` → `mcp-server-git`), when readable. */
  readonly pkg?: string;
  /**
   * Why `run` would refuse to start the entry (an option that chooses where code comes from, a URL
   * or a path instead of a package), in words built from validated text only; unset when it starts.
   */
  readonly refused?: string;
}

/** Options of uvx that decide nothing about what is installed or run (as the install step). */
const QUIET = new Set(['-q', '--quiet', '--no-progress']);
const REQUIREMENT = /^([^=@<>!~[\s]+)(?:(?:==|@)([^=\s]+))?$/;
const BIN = /^[A-Za-z0-9@._+~-]+$/;
/** An option's name only (`--index-url`, not its value): the rest may be a URL with a password. */
const OPTION_NAME = /^-{1,2}[A-Za-z][A-Za-z0-9-]{0,40}/;

/** `mcp_server.Git` → `mcp-server-git`, as PyPI compares names. */
export function normalizePythonName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/** The runner an argv starts, and the rest of its words; undefined for anything else. */
function runnerOf(argv: readonly string[]): { runner: PythonStart['runner']; tail: string[] } | undefined {
  const [program = '', ...rest] = argv;
  const name = posix.basename(program.replace(/\\/g, '/')).replace(/\.exe$/i, '');
  if (name === 'uvx') return { runner: 'uvx', tail: rest };
  if (name === 'uv' && rest[0] === 'tool' && rest[1] === 'run')
    return { runner: 'uv tool run', tail: rest.slice(2) };
  if (name === 'pipx' && rest[0] === 'run') return { runner: 'pipx run', tail: rest.slice(1) };
  return undefined;
}

/** `name`, `name==1.2` or `name@1.2`, validated; undefined for extras, ranges, URLs and paths. */
function requirement(text: string): { name: string; version?: string } | undefined {
  const match = REQUIREMENT.exec(text);
  const name = match?.[1];
  const version = match?.[2];
  if (name === undefined || !PYTHON_NAME.test(name)) return undefined;
  if (version !== undefined && version !== 'latest' && !PYTHON_VERSION.test(version)) return undefined;
  return { name, ...(version !== undefined && version !== 'latest' ? { version } : {}) };
}

function optionName(word: string): string {
  return OPTION_NAME.exec(word)?.[0] ?? 'an option';
}

/** Reads `uvx`/`uv tool run`/`pipx run` entries; undefined when the argv starts none of them. */
export function pythonStart(argv: readonly string[]): PythonStart | undefined {
  const found = runnerOf(argv);
  if (!found) return undefined;
  const { runner, tail } = found;
  if (runner === 'pipx run') return pipxStart(tail);
  let from: string | undefined;
  let index = 0;
  for (; index < tail.length; index++) {
    const word = tail[index] as string;
    if (QUIET.has(word)) continue;
    if (word === '--from' || word.startsWith('--from=')) {
      from = word === '--from' ? tail[++index] : word.slice('--from='.length);
      if (from === undefined) return { runner, refused: '--from has no package' };
      continue;
    }
    if (word.startsWith('-')) {
      return {
        runner,
        refused: `the ${runner} option ${optionName(word)} (it can choose where code comes from; mcp-sandbox's install step takes only --from <pkg>[==<version>])`,
      };
    }
    break;
  }
  const target = tail[index];
  if (target === undefined) return { runner, refused: 'no package to run' };
  const run = requirement(target);
  const pkg = from === undefined ? run : requirement(from);
  if (!run || !BIN.test(run.name)) return { runner, refused: 'the command to run is not a package name' };
  if (!pkg) {
    return {
      runner,
      refused:
        '--from names no package of the index (a URL, a path, git or extras): mcp-sandbox installs and pins index packages only',
    };
  }
  if (from !== undefined && run.version !== undefined) {
    return { runner, pkg: normalizePythonName(pkg.name), refused: 'with --from, the version goes on --from' };
  }
  return { runner, pkg: normalizePythonName(pkg.name) };
}

/** `pipx run [--spec <pkg>] <app> …`: pipx installs it itself, in the sandbox, at each start. */
function pipxStart(tail: readonly string[]): PythonStart {
  let spec: string | undefined;
  for (let index = 0; index < tail.length; index++) {
    const word = tail[index] as string;
    if (word === '--spec' || word.startsWith('--spec=')) {
      spec = word === '--spec' ? tail[++index] : word.slice('--spec='.length);
      continue;
    }
    if (word.startsWith('-')) continue;
    const pkg = requirement(spec ?? word);
    return { runner: 'pipx run', ...(pkg ? { pkg: normalizePythonName(pkg.name) } : {}) };
  }
  return { runner: 'pipx run' };
}

/**
 * What wrap and ls say about a Python entry they sandbox: that run will refuse it, or that pipx
 * installs inside the sandbox at every start (and why wrap does not rewrite it as uvx). Empty for
 * a uvx start the install step takes, and for anything that is not a Python runner.
 */
export function pythonStartNotes(argv: readonly string[]): string[] {
  const start = pythonStart(argv);
  if (!start) return [];
  if (start.refused) {
    return [
      `run refuses this ${start.runner} start, so the wrapped entry will not start: ${start.refused}; write it as uvx <package>[==<version>] [args]`,
    ];
  }
  if (start.runner !== 'pipx run') return [];
  const pkg = start.pkg ?? '<package>';
  return [
    `pipx run installs ${pkg} inside the sandbox at every start, which needs --allow-net pypi.org --allow-net files.pythonhosted.org for the server's whole session; uvx ${pkg} gets mcp-sandbox's install step instead (installed once with only the index reachable, pinned, then no network). wrap does not rewrite it: pip and uv resolve and configure (pip.conf, PIP_INDEX_URL) differently, so uvx is not the same start`,
  ];
}

/** Why the backend an entry is wrapped for will refuse its Python start (e2b: uvx; vm: any), or undefined. */
export function pythonBackendNote(argv: readonly string[], backend: string): string | undefined {
  const start = pythonStart(argv);
  if (!start || start.refused) return undefined;
  if (backend === 'vm' || (backend === 'e2b' && start.runner !== 'pipx run')) {
    return `the ${backend} backend refuses ${start.runner} servers, so the wrapped entry will not start; wrap it with --backend local`;
  }
  return undefined;
}
