import { createStderrLogger, escapeControls, UsageError } from '@mcpsandbox/core';
import type { CliOptions } from '../options.js';
import { reportError } from '../report.js';
import type { StateStore } from '../state-store.js';

/** Exit code of `state rm` for a name that does not exist. */
export const STATE_NOT_FOUND_EXIT = 1;

/** `mcp-sandbox state ls`: resolves with the exit code. */
export async function listStates(flags: { json?: boolean }, options: CliOptions): Promise<number> {
  const logger = createStderrLogger({ stream: options.io.stderr });
  try {
    const { root, states: entries } = await requireStore(options).list();
    if (flags.json) {
      options.io.stdout.write(`${JSON.stringify({ root, states: entries }, null, 2)}\n`);
    } else if (entries.length === 0) {
      options.io.stdout.write(`no named state in ${escapeControls(root)}\n`);
    } else {
      // The store's names are checked where they are made; a terminal is still never handed a control.
      const names = entries.map((e) => escapeControls(e.name));
      const width = Math.max(4, ...names.map((n) => n.length));
      const lines = entries.map(
        (e, i) =>
          `${(names[i] as string).padEnd(width)}  ${`${e.partial ? '>' : ''}${formatBytes(e.bytes)}`.padStart(10)}  ${String(e.files).padStart(6)} file(s)  ${e.modified.toISOString().slice(0, 19)}Z${e.partial ? '  (not counted in full)' : ''}`,
      );
      options.io.stdout.write(`${escapeControls(root)}\n${lines.join('\n')}\n`);
    }
    return 0;
  } catch (error) {
    return reportError(error, logger);
  }
}

/** `mcp-sandbox state rm <name...>`: resolves with the exit code. */
export async function removeStates(names: readonly string[], options: CliOptions): Promise<number> {
  const logger = createStderrLogger({ stream: options.io.stderr });
  try {
    const store = requireStore(options);
    let code = 0;
    for (const name of names) {
      const { root, removed } = await store.remove(name);
      if (removed) logger.info(`removed state ${name}`);
      else {
        logger.error(`no state named ${name} in ${root} (mcp-sandbox state ls lists them)`);
        code = STATE_NOT_FOUND_EXIT;
      }
    }
    return code;
  } catch (error) {
    return reportError(error, logger);
  }
}

function requireStore(options: CliOptions): StateStore {
  if (!options.state) throw new UsageError('this build of mcp-sandbox keeps no named state');
  return options.state;
}

function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}
