import type { Command } from 'commander';
import type { CliOptions } from '../options.js';

export function registerStateCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  const state = program
    .command('state')
    .description("A server's writable area kept across sessions (run --state <name>): list or remove it.");
  state
    .command('ls')
    .description('List the named states, with their size.')
    .option('--json', 'machine-readable output')
    .action(async (flags: { json?: boolean }) => {
      const { listStates } = await import('./state-action.js');
      setExitCode(await listStates(flags, options));
    });
  state
    .command('rm')
    .description('Remove named states: what the servers kept there is deleted.')
    .argument('<name...>', 'state names, as given to run --state')
    .action(async (names: string[]) => {
      const { removeStates } = await import('./state-action.js');
      setExitCode(await removeStates(names, options));
    });
}
