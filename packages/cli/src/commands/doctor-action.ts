import { ExitCode, escapeControls } from '@mcpsandbox/core';
import { sandboxInstallCacheCheck, standardChecks } from '../doctor/checks.js';
import { runDoctor } from '../doctor/run.js';
import { createSystemDoctorHost } from '../doctor/system.js';
import type { CliOptions } from '../options.js';

/** Exit code of doctor when the default backend cannot run here. */
export const DOCTOR_UNUSABLE_EXIT = 1;

export async function doctorAction(options: CliOptions): Promise<number> {
  const setup = (typeof options.doctor === 'function' ? await options.doctor() : options.doctor) ?? {};
  const host = setup.host ?? createSystemDoctorHost({ env: options.io.env, cwd: options.io.cwd });
  const installCache = options.installCache;
  const checks = installCache
    ? [...(setup.checks ?? standardChecks(host)), sandboxInstallCacheCheck(installCache)]
    : setup.checks;
  const report = await runDoctor(
    { ...setup, host, ...(checks ? { checks } : {}) },
    options.backends,
    options.defaultBackend,
  );
  // Versions and cache entries are read from the system: shown with controls escaped.
  options.io.stdout.write(`${escapeControls(report.lines.join('\n'))}\n`);
  return report.defaultUsable ? ExitCode.ok : DOCTOR_UNUSABLE_EXIT;
}
