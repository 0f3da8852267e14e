/** What `npx` would run: the package to install and the arguments after it. */
export interface NpxCommand {
  readonly spec: string;
  /** Set with `-p`/`--package`: the binary to run, else npx's own choice from the package. */
  readonly bin?: string;
  readonly args: readonly string[];
}

/**
 * Recognises `npx -y <spec> args…`, `npx --yes -- <spec> …` and `npx -y -p <spec> <bin> …`.
 * Anything else (other flags, no `-y`) is left for npx itself.
 */
export function parseNpx(argv: readonly string[]): NpxCommand | undefined {
  if (argv[0] !== 'npx' && !argv[0]?.endsWith('/npx')) return undefined;
  let yes = false;
  let pkg: string | undefined;
  let i = 1;
  for (; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '-y' || arg === '--yes') yes = true;
    else if (arg === '-p' || arg === '--package') pkg = argv[++i];
    else if (arg.startsWith('--package=')) pkg = arg.slice('--package='.length);
    else if (arg === '--') {
      i++;
      break;
    } else if (arg.startsWith('-')) return undefined;
    else break;
  }
  const first = argv[i];
  if (!yes || first === undefined) return undefined;
  if (pkg !== undefined) return { spec: pkg, bin: first, args: argv.slice(i + 1) };
  return { spec: first, args: argv.slice(i + 1) };
}
