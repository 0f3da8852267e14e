import { createStderrLogger, ExitCode } from '@mcpsandbox/core';
import { Command, CommanderError } from 'commander';
import { registerDoctorCommand } from './commands/doctor.js';
import { registerInspectCommand } from './commands/inspect.js';
import { registerRunCommand } from './commands/run.js';
import { registerServeCommand } from './commands/serve.js';
import { registerStateCommand } from './commands/state.js';
import { registerTraceCommand } from './commands/trace.js';
import { registerUpdateCommand } from './commands/update.js';
import { registerWrapCommands } from './commands/wrap.js';
import type { CliOptions } from './options.js';
import { reportError } from './report.js';

/**
 * Runs the program with user arguments (no `node` or script path) and resolves with the exit
 * code. It never calls process.exit: the binary does, once output is flushed.
 */
export async function runCli(args: readonly string[], options: CliOptions): Promise<number> {
  const { io } = options;
  let exitCode: number = ExitCode.ok;
  const program = createProgram(options, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...args], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successes; every other parse failure is a usage error.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    return reportError(error, createStderrLogger({ stream: io.stderr }));
  }
  return exitCode;
}

export function createProgram(options: CliOptions, setExitCode: (code: number) => void): Command {
  const { io } = options;
  const program = new Command('mcp-sandbox')
    .description('Run an MCP server in a sandbox, as a drop-in stdio wrapper.')
    .version(options.version, '-v, --version')
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => write(`mcp-sandbox: ${text.replace(/^error: /, 'error: ')}`),
    })
    .showHelpAfterError('(run "mcp-sandbox run --help" for usage)');

  registerRunCommand(program, options, setExitCode);
  registerServeCommand(program, options, setExitCode);
  registerWrapCommands(program, options, setExitCode);
  registerDoctorCommand(program, options, setExitCode);
  registerInspectCommand(program, options, setExitCode);
  registerTraceCommand(program, options, setExitCode);
  registerUpdateCommand(program, options, setExitCode);
  registerStateCommand(program, options, setExitCode);
  return program;
}
