import { PinChangedError, SetupFailedError } from '@mcpsandbox/core';
import type { InstallReport } from '../install-report.js';
import type { PythonNeed } from './managed-pythons.js';
import { hashMismatch, uvCause } from './resolved.js';
import type { UvxCommand } from './spec.js';
import { pythonNeeded, pythonRequirement, type UvTools } from './tools.js';

/** uv's own cause first: a changed pinned artifact, a Python too old, else uv's last lines. */
export function uvFailure(
  parsed: UvxCommand,
  what: string,
  status: { readonly code: number | null; readonly signal: string | null },
  report: InstallReport,
  tools: UvTools,
  pinned: boolean,
  granted: readonly string[],
): Error {
  const said = report.npmSaid(12).join('\n');
  const changed = pinned ? hashMismatch(said) : undefined;
  if (changed) {
    return new PinChangedError(
      `the index serves a different artifact for ${changed} than the pin of ${parsed.requirement} records: refusing it. ` +
        'If you trust the change, remove its pin from the pin lock and start again',
    );
  }
  const python = pythonNeeded(said, tools.pythonVersion);
  const cause = python ?? uvCause(said);
  const lines = [
    `${what} ${parsed.requirement} failed${cause ? `: ${cause}` : ''} (uv exited ${status.code ?? status.signal})`,
  ];
  // Hosts the build tried and was refused, less those granted already (the index, --install-allow-net).
  const { grants } = report.hosts(granted);
  if (grants.length > 0) {
    lines.push(
      `the install tried hosts it may not reach: ${grants.join(', ')}; if the build needs them, ` +
        `start with ${grants.map((grant) => `--install-allow-net ${grant}`).join(' ')}`,
    );
  }
  if (said) lines.push('uv said:', ...said.split('\n').map((line) => `  ${line}`));
  const need = pythonRequirement(said);
  if (need) return new PythonTooOldError(lines.join('\n'), status.code, need);
  return new SetupFailedError(lines.join('\n'), status.code);
}

/** The package's `requires-python` refuses the Python the environment was made with. */
export class PythonTooOldError extends SetupFailedError {
  constructor(
    message: string,
    exitCode: number | null,
    readonly need: PythonNeed,
  ) {
    super(message, exitCode);
  }
}
