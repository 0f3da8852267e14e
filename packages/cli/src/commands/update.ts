import { homedir } from 'node:os';
import {
  createStderrLogger,
  defaultPinLockFile,
  ExitCode,
  type PinUpdate,
  readPinLock,
  UsageError,
  updatePins,
} from '@mcpsandbox/core';
import type { Command } from 'commander';
import type { CliOptions } from '../options.js';
import { reportError } from '../report.js';

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
    .addHelpText(
      'after',
      `
On first install, the local and e2b backends pin each \`npx -y\` package (its version and npm
integrity) in a per-user lock file; later starts install exactly that and refuse anything else.
Run this after reviewing a new version (its changelog, its diff) to move the pin.`,
    )
    .action(async (name: string) => {
      const logger = createStderrLogger({ stream: options.io.stderr });
      try {
        setExitCode(await updateAction(name, options));
      } catch (error) {
        setExitCode(reportError(error, logger));
      }
    });
}

async function updateAction(name: string, options: CliOptions): Promise<number> {
  const { io } = options;
  const lockFile = defaultPinLockFile(io.env, io.env.HOME ?? homedir());
  const known = readPinLock(lockFile).pins;
  if (!known.some((pin) => pin.name === name)) {
    const names = [...new Set(known.map((pin) => pin.name))].join(', ') || '(none)';
    throw new UsageError(`no pinned package named ${name} in ${lockFile}; pinned: ${names}`);
  }
  const trust = { caFiles: [io.env.NODE_EXTRA_CA_CERTS] };
  for (const update of await updatePins(name, lockFile, trust))
    io.stdout.write(`${describeUpdate(update)}\n`);
  io.stdout.write(`re-pinned in ${lockFile}\n`);
  return ExitCode.ok;
}

export function describeUpdate(update: PinUpdate): string {
  const { from, to } = update;
  const date = (published: string | undefined) => (published ? `, published ${published.slice(0, 10)}` : '');
  const head = `${update.spec} from ${update.registry}:`;
  if (from.version !== to.version) {
    return `${head} ${from.version} (${short(from.integrity)}${date(from.published)}) → ${to.version} (${short(to.integrity)}${date(to.published)})`;
  }
  if (from.integrity !== to.integrity) {
    return `${head} ${to.version}, its tarball changed: ${short(from.integrity)} → ${short(to.integrity)}${date(to.published)}`;
  }
  return `${head} ${to.version}${date(to.published)}, unchanged`;
}

function short(integrity: string): string {
  return `${integrity.slice(0, 19)}…`;
}
