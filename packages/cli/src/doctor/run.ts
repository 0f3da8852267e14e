import { silentLogger } from '@mcpsandbox/core';
import type { BackendRegistry } from '../backends.js';
import { defaultBackendProbes, standardChecks } from './checks.js';
import type { BackendProbe, BackendStatus, CheckResult, DoctorHost, DoctorSetup } from './types.js';

export const STATUS_ICON = { ok: '✓', warn: '!', fail: '✗', info: '·' } as const;

export function formatResult(result: CheckResult): string {
  return `${STATUS_ICON[result.status]} ${result.title}: ${result.summary}${result.fix ? ` — fix: ${result.fix}` : ''}`;
}

export interface DoctorReport {
  readonly lines: readonly string[];
  /** Whether the default backend works here: doctor's exit code is 0 only then. */
  readonly defaultUsable: boolean;
}

/** Runs the checks, then one probe per registered backend; never throws for a failing check. */
export async function runDoctor(
  setup: DoctorSetup & { host: DoctorHost },
  backends: BackendRegistry,
  defaultBackend: string,
): Promise<DoctorReport> {
  const lines: string[] = [];
  const checks = setup.checks ?? standardChecks(setup.host);
  for (const c of checks) {
    let result: CheckResult;
    try {
      result = await c.run();
    } catch (error) {
      result = {
        status: 'fail',
        title: c.id,
        summary: `the check itself failed: ${(error as Error).message}`,
      };
    }
    lines.push(formatResult(result));
  }
  const probes: Readonly<Record<string, BackendProbe>> =
    setup.backendProbes ?? defaultBackendProbes(setup.host);
  let defaultUsable = false;
  for (const [name, entry] of Object.entries(backends)) {
    const factoryOptions = { hostEnv: setup.host.env, logger: silentLogger, settings: {} };
    const own = entry.probe?.bind(entry);
    const probe = probes[name] ?? (own ? () => own(factoryOptions) : undefined);
    const status = await backendStatus(name, entry.create, probe, setup.host);
    if (name === defaultBackend) defaultUsable = status.usable;
    const tag = name === defaultBackend ? ' (default)' : '';
    lines.push(
      formatResult({
        status: status.usable ? 'ok' : 'fail',
        title: `backend ${name}${tag}`,
        summary: `${status.usable ? 'usable' : 'not usable'}: ${status.summary}`,
        ...(status.fix ? { fix: status.fix } : {}),
      }),
    );
  }
  if (!Object.hasOwn(backends, defaultBackend)) {
    lines.push(
      formatResult({
        status: 'fail',
        title: 'default backend',
        summary: `${defaultBackend} is not registered`,
      }),
    );
  }
  return { lines, defaultUsable };
}

async function backendStatus(
  name: string,
  create: BackendRegistry[string]['create'],
  probe: BackendProbe | undefined,
  host: DoctorHost,
): Promise<BackendStatus> {
  if (probe) {
    try {
      return await probe();
    } catch (error) {
      return { usable: false, summary: `its probe failed: ${(error as Error).message}` };
    }
  }
  // Factories do no I/O (an entry may load the backend's module first): safe to build one just to
  // read its isolation.
  let isolation: string;
  try {
    isolation = (await create({ hostEnv: host.env, logger: silentLogger, settings: {} })).isolation;
  } catch (error) {
    return { usable: false, summary: `cannot be created: ${(error as Error).message}` };
  }
  if (isolation === 'none') return { usable: true, summary: 'nothing to check (it isolates nothing)' };
  return {
    usable: false,
    summary: `not checked: this build of mcp-sandbox wires no probe for ${name} (isolation ${isolation})`,
  };
}
