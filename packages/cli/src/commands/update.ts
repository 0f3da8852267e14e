import type { Command } from 'commander';
import type { CliOptions } from '../options.js';

export function registerUpdateCommand(
  program: Command,
  options: CliOptions,
  setExitCode: (code: number) => void,
): void {
  program
    .command('update')
    .description(
      'Accept what the registry serves now for a pinned `npx -y` package: shows the version change and publish dates, then re-pins.',
    )
    .argument('<package>', 'the package name, as in the server command (without a version)')
    .option(
      '--registry <url>',
      "ask this registry instead of the one each pin came from, and keep it (a moved registry's tarball)",
    )
    .addHelpText(
      'after',
      `
On first install, the local and e2b backends pin each \`npx -y\` package (its version and npm
integrity) in a per-user lock file; later starts install exactly that and refuse anything else.
Run this after reviewing a new version (its changelog, its diff) to move the pin.`,
    )
    .action(async (name: string, flags: { registry?: string }) => {
      const { updateAction } = await import('./update-action.js');
      setExitCode(await updateAction(name, options, flags.registry));
    });
}
