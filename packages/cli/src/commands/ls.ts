import { type Command, Option } from 'commander';
import { CLIENT_IDS } from '../config/clients.js';
import type { CliOptions } from '../options.js';

export function registerListCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  program
    .command('ls')
    .description('List the MCP servers each client is configured with, and whether each is sandboxed.')
    .addOption(new Option('--client <client>', 'only this client').choices(CLIENT_IDS))
    .option('--json', 'machine-readable output')
    .action(async (flags: { client?: string; json?: boolean }) => {
      // The config readers load with this command, not with every start.
      const { listCommand } = await import('./ls-action.js');
      setExitCode(await listCommand(flags, options));
    });
}
