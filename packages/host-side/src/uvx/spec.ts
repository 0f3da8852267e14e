import { basename } from 'node:path';
import { PYTHON_NAME, PYTHON_VERSION, UsageError } from '@mcpsandbox/core';
import { isBinName } from '../npx/spec.js';

/** `uvx [--from pkg] <pkg>[==ver|@ver] [args…]` (or `uv tool run …`), parsed once and validated. */
export interface UvxCommand {
  /** The distribution's name, as given (PEP 503 normalization happens in uv). */
  readonly name: string;
  /** The exact version asked for, or undefined for the newest the index has. */
  readonly version: string | undefined;
  /** The requirement uv gets: `name` or `name==version`, built from the validated parts only. */
  readonly requirement: string;
  /** The console script to run. */
  readonly bin: string;
  readonly args: readonly string[];
}

/** `uvx …` or `uv tool run …`, whatever follows: such a start has an install step (or a refusal). */
export function isUvxCommand(command: readonly string[]): boolean {
  const [program, first, second] = command;
  if (program === undefined) return false;
  return basename(program) === 'uvx' || (basename(program) === 'uv' && first === 'tool' && second === 'run');
}

/** Options that take no part in what is installed or run: accepted and dropped. */
const QUIET = new Set(['-q', '--quiet', '--no-progress']);

/**
 * Recognizes `uvx …` and `uv tool run …`; anything else is not a uvx command (undefined). An
 * option this parser does not know is refused rather than passed on: it could change where the
 * code comes from (`--index`, `--with`, `--python`) in a way the install step would not see.
 */
export function parseUvxCommand(command: readonly string[]): UvxCommand | undefined {
  const [program, ...rest] = command;
  if (program === undefined) return undefined;
  let tail: readonly string[];
  if (basename(program) === 'uvx') tail = rest;
  else if (basename(program) === 'uv' && rest[0] === 'tool' && rest[1] === 'run') tail = rest.slice(2);
  else return undefined;
  let from: string | undefined;
  let index = 0;
  for (; index < tail.length; index++) {
    const arg = tail[index]!;
    if (QUIET.has(arg)) continue;
    if (arg === '--from') {
      from = tail[++index];
      if (from === undefined) throw usage('--from needs a package: uvx --from <pkg> <command>');
      continue;
    }
    if (arg.startsWith('--from=')) {
      from = arg.slice('--from='.length);
      continue;
    }
    if (arg.startsWith('-')) {
      throw usage(
        `uvx option ${JSON.stringify(arg)} is not supported by mcp-sandbox's install step; ` +
          'supported: uvx [--from <pkg>[==<version>]] <command>[==<version>|@<version>] [args…]',
      );
    }
    break;
  }
  const target = tail[index];
  if (target === undefined) throw usage('uvx needs a package to run: uvx <pkg> [args…]');
  const args = tail.slice(index + 1);
  const run = splitRequirement(target);
  const pkg = from === undefined ? run : splitRequirement(from);
  if (from !== undefined && run.version !== undefined) {
    throw usage(
      `with --from, give the version on the package (--from ${pkg.name}==${run.version}), not the command`,
    );
  }
  if (!isBinName(run.name)) throw usage(`uvx: ${JSON.stringify(run.name)} is not a command name`);
  return {
    name: pkg.name,
    version: pkg.version,
    requirement: pkg.version === undefined ? pkg.name : `${pkg.name}==${pkg.version}`,
    bin: run.name,
    args: args[0] === '--' ? args.slice(1) : args,
  };
}

/** `name`, `name==1.2`, `name@1.2`; extras, ranges, URLs and paths are refused. */
function splitRequirement(text: string): { readonly name: string; readonly version: string | undefined } {
  const match = /^([^=@<>!~[\s]+)(?:(?:==|@)([^=\s]+))?$/.exec(text);
  const name = match?.[1];
  const version = match?.[2];
  if (
    !match ||
    name === undefined ||
    !PYTHON_NAME.test(name) ||
    (version !== undefined && version !== 'latest' && !PYTHON_VERSION.test(version))
  ) {
    throw usage(
      `uvx: ${JSON.stringify(text)} is not a package mcp-sandbox can install and pin; ` +
        'give a name from the index, optionally with an exact version (pkg==1.2.3 or pkg@1.2.3)',
    );
  }
  return { name, version: version === 'latest' ? undefined : version };
}

function usage(message: string): UsageError {
  return new UsageError(message);
}
