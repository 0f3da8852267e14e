import type { NetworkSpec, PrepareOptions } from '@mcpsandbox/core';
import type { InstallReport } from '../install-report.js';
import { checkUserNpmCache, type UserNpmCache } from '../user-npm-cache.js';
import type { Bind } from '../view.js';
import type { HostNpmConfig } from './npm-config.js';
import { type NpxDeps, SANDBOX_NPM_CACHE } from './types.js';

export interface InstallStep {
  readonly argv: readonly string[];
  /** The user's npm cache, bound read-write for this step. */
  readonly cache?: Bind;
  /** Runs the packages' own code (lifecycle scripts). */
  readonly scripts: boolean;
}

/**
 * An install in two halves that never share a writable place but the prefix. The fetch is
 * npm's own code alone (`--ignore-scripts`, no git): with the user's cache it first resolves
 * the tree against the registry (`--prefer-online`, no credentials: a private package the
 * cache holds is not installed unless the registry serves it to anyone), then installs that
 * lock taking tarballs from the cache by integrity (`--prefer-offline`). The scripts half is
 * `npm rebuild`: the lifecycle scripts in dependency order and the bin links, with the cache
 * not mounted, so nothing a script writes reaches a later install or a direct npx.
 */
export function installSteps(
  inside: string,
  spec: string,
  registry: string,
  npmConfig: HostNpmConfig,
  cache: UserNpmCache | undefined,
): InstallStep[] {
  const common = [
    '--prefix',
    inside,
    '--registry',
    registry,
    '--no-audit',
    '--no-fund',
    '--no-update-notifier',
    '--loglevel',
    'warn',
    '--fetch-retries',
    '1',
    ...(npmConfig.strictSsl ? [] : ['--strict-ssl', 'false']),
    ...(npmConfig.cafile ? ['--cafile', npmConfig.cafile] : []),
  ];
  // A git dependency would run its `prepare` during the fetch: no git at all there.
  const fetchOnly = ['--ignore-scripts', '--git', '/bin/false'];
  const scripts: InstallStep = { argv: ['npm', 'rebuild', ...common], scripts: true };
  if (!cache) {
    return [{ argv: ['npm', 'install', ...common, ...fetchOnly, spec], scripts: false }, scripts];
  }
  const bind: Bind = { source: cache.path, dest: SANDBOX_NPM_CACHE, mode: 'rw' };
  const shared = [...fetchOnly, '--cache', SANDBOX_NPM_CACHE];
  return [
    {
      argv: ['npm', 'install', ...common, ...shared, '--prefer-online', '--package-lock-only', spec],
      cache: bind,
      scripts: false,
    },
    { argv: ['npm', 'ci', ...common, ...shared, '--prefer-offline'], cache: bind, scripts: false },
    scripts,
  ];
}

/** Reasons already told: the fallback to a private cache is said once per process. */
const toldNoCache = new Set<string>();

/** The user's npm cache for the fetch, when it validates (see user-npm-cache.ts); else said once. */
export function sharedCache(deps: NpxDeps, npmConfig: HostNpmConfig): UserNpmCache | undefined {
  const places = deps.cache.userCache;
  if (!places) return undefined;
  const check = checkUserNpmCache(npmConfig.cache, {
    ...places,
    ownerUid: deps.runAs?.uid ?? process.getuid?.() ?? 0,
    installCacheRoot: deps.cache.cacheRoot,
  });
  if (check.ok) return check.cache;
  if (!toldNoCache.has(check.reason)) {
    toldNoCache.add(check.reason);
    deps.logger.info(`${check.reason}: installs download into a private cache instead`);
  }
  return undefined;
}

/** One install step in the sandbox: its output shown and kept for the report. */
export async function runStep(
  argv: readonly string[],
  binds: readonly Bind[],
  network: NetworkSpec,
  env: Readonly<Record<string, string>>,
  report: InstallReport,
  options: PrepareOptions,
  deps: NpxDeps,
): Promise<{ readonly code: number | null; readonly signal: string | null }> {
  const proc = await deps.install(argv, binds, network, env, (event) => report.event(event));
  void proc.closeStdin();
  const forward = async (stream: AsyncIterable<Uint8Array>) => {
    for await (const chunk of stream) {
      options.stderr(chunk);
      report.output(chunk);
    }
  };
  const abort = () => void proc.kill('SIGKILL');
  options.signal?.addEventListener('abort', abort, { once: true });
  try {
    const [status] = await Promise.all([proc.exit, forward(proc.stdout), forward(proc.stderr)]);
    options.signal?.throwIfAborted();
    return status;
  } finally {
    options.signal?.removeEventListener('abort', abort);
  }
}
