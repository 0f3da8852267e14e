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
import type { CliOptions } from '../options.js';
import { reportError } from '../report.js';

/** `mcp-sandbox update <package>`: resolves with the exit code. */
export async function updateAction(name: string, options: CliOptions, registry?: string): Promise<number> {
  const logger = createStderrLogger({ stream: options.io.stderr });
  try {
    return await repin(name, options, registry);
  } catch (error) {
    return reportError(error, logger);
  }
}

async function repin(name: string, options: CliOptions, registry: string | undefined): Promise<number> {
  if (registry !== undefined && !/^https?:\/\/[^\s]+$/.test(registry)) {
    throw new UsageError(`--registry ${JSON.stringify(registry)}: give the registry's http(s) URL`);
  }
  const { io } = options;
  const lockFile = defaultPinLockFile(io.env, io.env.HOME ?? homedir());
  const known = readPinLock(lockFile).pins;
  if (!known.some((pin) => pin.name === name)) {
    const names = [...new Set(known.map((pin) => pin.name))].join(', ') || '(none)';
    throw new UsageError(`no pinned package named ${name} in ${lockFile}; pinned: ${names}`);
  }
  const trust = { caFiles: [io.env.NODE_EXTRA_CA_CERTS] };
  const url = registry && (registry.endsWith('/') ? registry : `${registry}/`);
  for (const update of await updatePins(name, lockFile, trust, url))
    io.stdout.write(`${describeUpdate(update)}\n`);
  io.stdout.write(`re-pinned in ${lockFile}\n`);
  return ExitCode.ok;
}

export function describeUpdate(update: PinUpdate): string {
  const { from, to } = update;
  const date = (published: string | undefined) => (published ? `, published ${published.slice(0, 10)}` : '');
  const moved = update.newRegistry ? ` (now from ${update.newRegistry})` : '';
  const head = `${update.spec} from ${update.registry}${moved}:`;
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
