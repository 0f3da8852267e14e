import { readFileSync } from 'node:fs';
import { runCli } from '@mcpsandbox/cli';
import { builtInBackends, DEFAULT_BACKEND } from './backends.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** Runs the `mcp-sandbox` program on this process's stdio and resolves with its exit code. */
export function main(args: readonly string[]): Promise<number> {
  return runCli(args, {
    backends: builtInBackends,
    defaultBackend: DEFAULT_BACKEND,
    version: version(),
    io: {
      stdin: process.stdin,
      stdout: process.stdout,
      stderr: process.stderr,
      env: process.env,
      cwd: process.cwd(),
      signals: process,
    },
  });
}
