import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CliOptions } from '../options.js';
import type { TraceFlags } from './trace-action.js';

export function registerTraceCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  program
    .command('trace')
    .description('Summarize a trace written by `run --trace`, or follow one as it is written.')
    .argument('<file>', 'a JSONL trace file')
    .option('--json', 'print the summary as JSON')
    .option('-f, --follow', 'print each message as it is appended, until interrupted')
    .option('--suggest', 'print the --allow-net flags that would have let every refused egress through')
    .action(async (file: string, flags: TraceFlags) => {
      // The trace reader and summary load with this command, not with every start.
      const { traceAction } = await import('./trace-action.js');
      setExitCode(await traceAction(resolve(options.io.cwd, file), flags, options));
    });
}
