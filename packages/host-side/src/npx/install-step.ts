/**
 * One step of an npx install in its own sandbox, as npx.ts's install() runs them: the binds, the
 * install's own npm cache as root (seeded while the step's npm loads, see seed-cache.ts), the
 * failed optional packages npm would skip, and the failure told in npm's own words first.
 */
import { dirname, join } from 'node:path';
import { type PrepareOptions, parseRegistrySpec, SetupFailedError } from '@mcpsandbox/core';
import type { OpenDir } from '../host-fs.js';
import type { InstallReport } from '../install-report.js';
import type { Bind } from '../view.js';
import type { HostNpmConfig } from './npm-config.js';
import { dropOptional, MAX_SKIPPED } from './optional.js';
import type { installBudget } from './quota.js';
import { makeInstallCache, type SeededCache, startSeeding } from './seed-cache.js';
import { type InstallStep, type nodeHeaders, runStep } from './steps.js';
import { type NpxCacheOptions, type NpxDeps, SANDBOX_NPM_CACHE } from './types.js';
import { warmRegistryAgent } from './vouched.js';
import type { InstallGuard } from './watchdog.js';

type StepStatus = { readonly code: number | null; readonly signal: string | null };

/** What runInstallStep needs of the install as a whole. */
export interface StepInstall {
  readonly spec: string;
  readonly inside: string;
  readonly registry: string;
  readonly grant: string;
  readonly npmConfig: HostNpmConfig;
  readonly budget: ReturnType<typeof installBudget>;
  readonly optional: ReadonlySet<string>;
}

/** One install step's sandbox, as install() set it up. */
export interface StepContext {
  readonly staging: OpenDir;
  readonly stagingName: string;
  readonly prefix: OpenDir;
  readonly prefixBind: Bind;
  readonly trust: readonly Bind[];
  readonly headers: ReturnType<typeof nodeHeaders>;
  readonly env: Readonly<Record<string, string>>;
  readonly report: InstallReport;
  readonly guard: InstallGuard;
}

/**
 * Runs `step` (the scripts step skipping failed optional packages); throws the install's failure.
 * With `before`, the step before it: this one starts now, gated (see InstallStep.early), and goes
 * on once `before` has succeeded; `before`'s failure is the one thrown.
 */
export async function runInstallStep(
  step: InstallStep,
  context: StepContext,
  install: StepInstall,
  options: PrepareOptions,
  deps: NpxDeps,
  before?: () => Promise<void>,
): Promise<void> {
  const { prefix, report, headers } = context;
  const seed = step.seeded
    ? installCache(step.seeded.path, context, install, deps, before !== undefined)
    : undefined;
  const binds = [
    context.prefixBind,
    ...context.trust,
    ...(step.cache ? [step.cache] : []),
    ...(seed ? [seededBind(deps.cache.cacheRoot, context.stagingName, seed.cache)] : []),
    ...(step.binds ?? []),
    ...(step.scripts && headers ? headers.binds : []),
  ];
  const ready = async () => {
    await before?.();
    // The lock is there now. npm reads the cache only once it is seeded: nothing it holds is
    // downloaded again.
    await seed?.fill();
  };
  // The fetch reaches the registry only; the scripts as today's install scripts do.
  const hosts = step.scripts ? [install.grant, ...(deps.cache.installHosts ?? [])] : [install.grant];
  let gate: Promise<void> | undefined;
  if (before) {
    gate = ready();
    // Its failure is thrown below, once this step is stopped; never an unhandled rejection.
    gate.catch(() => {});
  } else await ready();
  // npm's own steps are counted again before the packages' code runs (below), or by the seal.
  const count = step.scripts;
  if (step.scripts) {
    const quota = context.guard.finalCount();
    if (quota) throw quota;
  }
  const run = () =>
    runStep(
      step.argv,
      binds,
      { allow: hosts },
      context.env,
      report,
      options,
      deps,
      context.guard,
      gate,
      count,
    );
  let status: StepStatus;
  try {
    status = step.scripts
      ? await skippingOptional(run, {
          report,
          inside: install.inside,
          prefix,
          optional: install.optional,
          logger: deps.logger,
        })
      : await run();
  } finally {
    // The step before is over too (this one could not start): nothing runs beside what follows.
    await gate?.catch(() => {});
    // No more seeding once the step is over. The cache itself goes before any package code runs,
    // and is never published (npx.ts).
    await seed?.stop();
  }
  // The step before failed (this one was stopped unstarted): that is the install's failure.
  await gate;
  if (status.code !== 0) throw installFailure(install.spec, step, install.grant, status, report, deps.cache);
}

/**
 * As root, the install's own npm cache (seed-cache.ts): made empty now, before the step's sandbox
 * starts; `fill` seeds it from root's (`lent`), `stop` ends the seeding (install() removes the
 * cache). With `early`, the vouch's connections are opened now, while the step before runs.
 */
function installCache(
  lent: string,
  context: StepContext,
  install: StepInstall,
  deps: NpxDeps,
  early: boolean,
): { readonly cache: SeededCache; fill(): Promise<unknown>; stop(): Promise<void> } {
  const { staging, prefix } = context;
  const cache = makeInstallCache(staging, deps.runAs);
  const trust = {
    caFiles: [install.npmConfig.cafile, deps.cache.hostEnv.NODE_EXTRA_CA_CERTS],
    strictSsl: install.npmConfig.strictSsl,
  };
  const probe = early ? exactVersion(install.spec) : undefined;
  const agent = probe ? warmRegistryAgent(install.registry, trust, probe) : undefined;
  const stop = new AbortController();
  let seeding: Promise<unknown> | undefined;
  return {
    cache,
    fill: () => {
      seeding = startSeeding({ staging, prefix }, cache, lent, install.registry, {
        trust,
        limits: { fileBytes: install.budget.limit.bytes, totalBytes: install.budget.limit.bytes },
        ...(deps.runAs ? { owner: deps.runAs } : {}),
        signal: stop.signal,
        ...(agent ? { agent } : {}),
      }).catch(() => undefined);
      return seeding;
    },
    stop: async () => {
      stop.abort();
      await seeding;
      // Unused when the step before failed; closing twice is nothing.
      void agent?.then((opened) => opened?.close());
    },
  };
}

/** `name@1.2.3` as its name and version; undefined for anything else. */
function exactVersion(spec: string): { readonly name: string; readonly version: string } | undefined {
  try {
    const parsed = parseRegistrySpec(spec);
    return parsed?.selector.kind === 'version'
      ? { name: parsed.name, version: parsed.selector.value }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The seeded cache where npm's `ci` looks for it, read-write (npm writes its own records there). */
function seededBind(cacheRoot: string, stagingName: string, seeded: SeededCache): Bind {
  return { source: join(cacheRoot, stagingName, seeded.name), dest: SANDBOX_NPM_CACHE, mode: 'rw' };
}

/**
 * npm's rebuild fails on any script; npm's install skips an optional package whose build fails
 * (and removes it): so does the scripts step, which then runs again without it.
 */
async function skippingOptional(
  run: () => Promise<StepStatus>,
  at: {
    readonly report: InstallReport;
    readonly inside: string;
    readonly prefix: OpenDir;
    readonly optional: ReadonlySet<string>;
    readonly logger: NpxDeps['logger'];
  },
): Promise<StepStatus> {
  let status = await run();
  for (let skipped = 0; status.code !== 0 && skipped < MAX_SKIPPED; skipped++) {
    const failed = at.report.failedPath(at.inside);
    if (failed === undefined || !at.optional.has(failed)) break;
    const name = dropOptional(at.prefix, failed);
    at.logger.info(
      `skipped the optional dependency ${name ?? '(unnamed)'}: its install script failed (npm skips a failed optional dependency too)`,
    );
    at.report.nextAttempt();
    status = await run();
  }
  return status;
}

/**
 * npm's own cause first, then the granted hosts this host could not reach (with why: granting
 * them again would not help), the hosts refused as not granted (with the flag, never one already
 * given), npm's lines, and the log.
 */
function installFailure(
  spec: string,
  step: InstallStep,
  grant: string,
  status: { readonly code: number | null; readonly signal: string | null },
  report: InstallReport,
  cache: NpxCacheOptions,
): SetupFailedError {
  const cause = report.npmCause();
  const what = step.scripts
    ? "in its build step (npm rebuild: the packages' install scripts)"
    : 'in its download step (npm install --ignore-scripts)';
  const lines = [
    `installing ${spec} failed ${what}${cause === undefined ? '' : `: ${cause}`} (npm exited ${status.code ?? status.signal})`,
  ];
  // npm's own error first: what the step said, before any suggestion.
  const said = report.npmSaid();
  if (said.length > 0) lines.push('npm said:', ...said.map((line) => `  ${line}`));
  const allowed = [grant, ...(cache.installHosts ?? [])];
  const { refused, grants, unreachable } = report.hosts(allowed);
  if (unreachable.length > 0) {
    lines.push(
      'its install scripts reached for granted host(s) this host could not reach (granting them again will not help):',
      ...unreachable.map((line) => `  ${line}`),
    );
  }
  if (refused.length > 0) {
    // Built from validated hosts only: pasted into a shell, the flags run nothing.
    const flags = grants.map((value) => `--install-allow-net ${value}`).join(' ');
    lines.push(
      `its install scripts tried ${refused.join(', ')}, which the install step may not reach (only ${allowed.join(', ')}); ` +
        `if the package downloads what it needs at install time, grant it for the install only: ${flags}`,
    );
  }
  if (report.invalidHosts > 0) {
    lines.push(
      `its install scripts also asked for ${report.invalidHosts} host(s) that are not valid host names; ` +
        'refused, and no flag can grant them',
    );
  }
  const name = `install-${spec.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80)}-${new Date().toISOString().replace(/[:.]/g, '-')}.log`;
  const log = report.saveLog(cache.logDir ?? join(dirname(cache.cacheRoot), 'logs'), name);
  if (log) lines.push(`the whole install output: ${log}`);
  return new SetupFailedError(lines.join('\n'), status.code);
}
