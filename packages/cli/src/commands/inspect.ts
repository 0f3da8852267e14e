import type { Command } from 'commander';
import type { CliOptions } from '../options.js';
import type { InspectFlags } from './inspect-action.js';
import { addRunOptions } from './run.js';

export function registerInspectCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  const inspect = program
    .command('inspect')
    .description(
      'Start a server as `run` would, list what it offers (tools, resources, prompts), then stop it.',
    )
    .argument('<command...>', 'the MCP server command and its arguments (put it after --)')
    .passThroughOptions();
  addRunOptions(inspect, options)
    .option('--json', 'print the report as JSON')
    .option(
      '--timeout <duration>',
      'how long the server may take to answer server/discover or initialize, counted from its start (after any install)',
      '30s',
    )
    .addHelpText(
      'after',
      '\nExample:\n  mcp-sandbox inspect -- npx -y @modelcontextprotocol/server-everything',
    )
    .action(async (command: string[], flags: InspectFlags, cmd: Command) => {
      // The MCP client and the report load with this command, not with every start.
      const { inspectAction } = await import('./inspect-action.js');
      setExitCode(
        await inspectAction(command, flags, options, cmd.getOptionValueSource('backend') === 'cli'),
      );
    });
}
