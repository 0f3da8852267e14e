import { readFileSync } from 'node:fs';

/** The installed package's version, read from its package.json (dist/../package.json). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** `mcp-sandbox --version` (or `-v`) and nothing else: what the program would print for it. */
export function versionOnly(args: readonly string[]): boolean {
  return args.length === 1 && (args[0] === '--version' || args[0] === '-v');
}
