import { ExitCode, escapeControls } from '@mcpsandbox/core';
import type { Command } from 'commander';
import { runDoctor } from '../doctor/run.js';
import { createSystemDoctorHost } from '../doctor/system.js';
import type { CliOptions } from '../options.js';

/** Exit code of doctor when the default backend cannot run here. */
export const DOCTOR_UNUSABLE_EXIT = 1;

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
      const setup = options.doctor ?? {};
      const host = setup.host ?? createSystemDoctorHost({ env: options.io.env });
      const report = await runDoctor({ ...setup, host }, options.backends, options.defaultBackend);
      // Versions and cache entries are read from the system: shown with controls escaped.
      options.io.stdout.write(`${escapeControls(report.lines.join('\n'))}\n`);
      setExitCode(report.defaultUsable ? ExitCode.ok : DOCTOR_UNUSABLE_EXIT);
    });
}
