import { basename } from 'node:path';

export interface NpxCommand {
  readonly spec: string;
  readonly args: readonly string[];
}

/**
 * Recognizes `npx -y <pkg> [args…]` and `npx --yes <pkg> [args…]`. Anything else (other npx
 * flags, no `--yes`) is left alone and runs as given.
 */
export function parseNpxCommand(command: readonly string[]): NpxCommand | undefined {
  const [program, ...rest] = command;
  if (program === undefined || basename(program) !== 'npx') return undefined;
  let yes = false;
  let index = 0;
  for (; index < rest.length; index++) {
    const arg = rest[index]!;
    if (arg === '-y' || arg === '--yes') yes = true;
    else if (arg.startsWith('-')) return undefined;
    else break;
  }
  const spec = rest[index];
  if (!yes || spec === undefined) return undefined;
  const args = rest.slice(index + 1);
  return { spec, args: args[0] === '--' ? args.slice(1) : args };
}

/** npm's rule for package names; anything else is not used as a path, even inside the sandbox. */
export const PACKAGE_NAME = /^(@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/;

/** `name` or `@scope/name` as path components; undefined for anything else (`..`, slashes). */
export function packageNameParts(name: string): string[] | undefined {
  const part = /^[A-Za-z0-9._~-]+$/;
  const parts = name.startsWith('@')
    ? [name.slice(0, name.indexOf('/')), name.slice(name.indexOf('/') + 1)]
    : [name];
  if (name.startsWith('@') && (!name.includes('/') || !part.test(parts[0]!.slice(1)))) return undefined;
  const last = parts[parts.length - 1]!;
  if (!part.test(last) || last === '.' || last === '..' || name.split('/').length > 2) return undefined;
  return parts;
}

export function isBinName(bin: string): boolean {
  return /^[A-Za-z0-9@._+~-]+$/.test(bin) && bin !== '.' && bin !== '..';
}
