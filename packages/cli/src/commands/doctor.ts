import type { Command } from 'commander';
import type { CliOptions } from '../options.js';

export function registerDoctorCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  program
    .command('doctor')
    .description('Check this machine: what each backend needs, one line each with the fix.')
    .addHelpText(
      'after',
      `
Output goes to stdout. Exit code 0 only if the default backend (${options.defaultBackend}) works here.
Secrets are never printed: for E2B_API_KEY only whether it is set.`,
    )
    .action(async () => {
      // The checks load with doctor, not with every start.
      const { doctorAction } = await import('./doctor-action.js');
      setExitCode(await doctorAction(options));
    });
}
