import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, sep } from 'node:path';
import type { NetworkSpec, PrepareOptions } from '@mcpsandbox/core';
import type { InstallReport } from '../install-report.js';
import { checkUserNpmCache, type UserNpmCache } from '../user-npm-cache.js';
import { type Bind, commandBinds, hiddenRoots, isHidden, locateCommand } from '../view.js';
import { GO_AHEAD } from './go-ahead.js';
import type { HostNpmConfig } from './npm-config.js';
import { type NpxDeps, SANDBOX_NPM_CACHE } from './types.js';
import type { InstallGuard } from './watchdog.js';

export interface InstallStep {
  readonly argv: readonly string[];
  /** The user's npm cache, bound read-write for this step. */
  readonly cache?: Bind;
  /** Runs the packages' own code (lifecycle scripts). */
  readonly scripts: boolean;
  /** More read-only binds the step needs (npm's own files, when it runs npm by path). */
  readonly binds?: readonly Bind[];
  /**
   * Runs with the install's own npm cache at {@link SANDBOX_NPM_CACHE}, seeded by the host from
   * the lent cache with the tarballs of the lock the registry vouches for (seed-cache.ts).
   */
  readonly seeded?: UserNpmCache;
  /**
   * Started while the step before it runs, through npm-gate.js: it loads npm meanwhile and waits
   * for the host's go-ahead on its stdin, given once the step before has succeeded.
   */
  readonly early?: true;
}

/**
 * The fetch with the user's cache in one sandbox process (one sandbox start, not two): a fixed
 * script, the npm to run, the spec and npm's options as positional parameters, never as shell
 * text. npm runs by the path the host found, its directory first on PATH for its `#!` line, as
 * when npm itself is the command.
 */
const FETCH_SCRIPT =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  'npm=$1; spec=$2; shift 2; PATH="${npm%/*}:$PATH"; ' +
  '"$npm" install "$@" --prefer-online --package-lock-only "$spec" && exec "$npm" ci "$@" --prefer-offline';

/** npm as the host's PATH finds it, and what of a hidden directory it needs bound to start. */
function locateNpm(
  hostEnv: Readonly<Record<string, string | undefined>>,
): { readonly path: string; readonly binds: readonly Bind[] } | undefined {
  const path = locateCommand('npm', hostEnv.PATH, process.cwd());
  if (path === undefined || !isAbsolute(path)) return undefined;
  return { path, binds: commandBinds(path, hiddenRoots(hostEnv.HOME)).binds };
}

/**
 * An install in two halves that never share a writable place but the prefix. The fetch is
 * npm's own code alone (`--ignore-scripts`, no git): with the user's cache it first resolves
 * the tree against the registry (`--prefer-online`, no credentials: a private package the
 * cache holds is not installed unless the registry serves it to anyone), then installs that
 * lock taking tarballs from the cache by integrity (`--prefer-offline`). The scripts half is
 * `npm rebuild`: the lifecycle scripts in dependency order and the bin links, with the cache
 * not mounted, so nothing a script writes reaches a later install or a direct npx. As root,
 * root's own cache is never mounted: between the resolve and `npm ci` the host seeds the
 * install's own cache with what the registry vouches for (seed-cache.ts).
 */
export function installSteps(
  inside: string,
  spec: string,
  registry: string,
  npmConfig: HostNpmConfig,
  cache: UserNpmCache | undefined,
  hostEnv: Readonly<Record<string, string | undefined>>,
  npmGate?: string,
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
  if (cache.readOnly) {
    // Resolved against the registry with a cache of the sandbox's own, then installed from the
    // lock with the install's cache the host seeded in between; the lent cache is never bound.
    const resolve = [...common, ...fetchOnly, '--prefer-online', '--package-lock-only', spec];
    const ci = [...common, ...fetchOnly, '--cache', SANDBOX_NPM_CACHE, '--prefer-offline'];
    const gated = npmGate ? gatedNpm(npmGate, hostEnv) : undefined;
    const install: InstallStep = gated
      ? { argv: [...gated.argv, 'ci', ...ci], scripts: false, seeded: cache, binds: gated.binds, early: true }
      : { argv: ['npm', 'ci', ...ci], scripts: false, seeded: cache };
    return [{ argv: ['npm', 'install', ...resolve], scripts: false }, install, scripts];
  }
  const bind: Bind = { source: cache.path, dest: SANDBOX_NPM_CACHE, mode: 'rw' };
  const shared = [...fetchOnly, '--cache', SANDBOX_NPM_CACHE];
  const npm = locateNpm(hostEnv);
  if (npm) {
    const argv = ['sh', '-c', FETCH_SCRIPT, 'sh', npm.path, spec, ...common, ...shared];
    return [{ argv, cache: bind, scripts: false, binds: npm.binds }, scripts];
  }
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

/**
 * `node <npm-gate.js> <npm-cli.js>` when the host's npm is npm's own `bin/npm-cli.js` (a shim,
 * Volta's or Windows', is run as plain `npm`), with what of hidden directories both need bound.
 */
function gatedNpm(
  gate: string,
  hostEnv: Readonly<Record<string, string | undefined>>,
): { readonly argv: readonly string[]; readonly binds: readonly Bind[] } | undefined {
  const npm = locateNpm(hostEnv);
  if (!npm) return undefined;
  let cli: string;
  try {
    cli = realpathSync(npm.path);
  } catch {
    return undefined;
  }
  if (!cli.endsWith(`${sep}bin${sep}npm-cli.js`) || !isAbsolute(gate)) return undefined;
  const hidden = isHidden(gate, hiddenRoots(hostEnv.HOME));
  const binds = [...npm.binds, ...(hidden ? [{ source: gate, dest: gate, mode: 'ro' as const }] : [])];
  return { argv: ['node', gate, cli], binds };
}

/**
 * The headers installed with the node the install step runs (`<prefix>/include/node`), as the
 * host's npm builds native modules against them: `npm_config_nodedir` for node-gyp (which would
 * otherwise download them from nodejs.org), and a read-only bind when they are under a hidden
 * directory (nvm's, in the home). Undefined when that node has no headers beside it.
 */
export function nodeHeaders(
  hostEnv: Readonly<Record<string, string | undefined>>,
): { readonly nodedir: string; readonly binds: readonly Bind[] } | undefined {
  const found = locateCommand('node', hostEnv.PATH, process.cwd());
  if (found === undefined || !isAbsolute(found)) return undefined;
  let prefix: string;
  try {
    const real = realpathSync(found);
    if (basename(dirname(real)) !== 'bin') return undefined;
    prefix = dirname(dirname(real));
    if (!statSync(join(prefix, 'include', 'node', 'node_version.h')).isFile()) return undefined;
  } catch {
    return undefined;
  }
  const headers = join(prefix, 'include', 'node');
  const hidden = isHidden(headers, hiddenRoots(hostEnv.HOME));
  return { nodedir: prefix, binds: hidden ? [{ source: headers, dest: headers, mode: 'ro' }] : [] };
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
  if (!check.quiet && !toldNoCache.has(check.reason)) {
    toldNoCache.add(check.reason);
    deps.logger.info(`${check.reason}: installs download into a private cache instead`);
  }
  return undefined;
}

/**
 * One install step in the sandbox: its output shown and kept for the report, what it writes
 * counted while it runs (killed past the quota, then refused with the guard's error), and once
 * more when it ends unless `count` is false (a count comes next anyway: before the next step
 * runs package code, or the seal's). With a `gate`, its stdin stays open until the gate resolves
 * (an early step: see {@link InstallStep.early}), and a gate that rejects kills it.
 */
export async function runStep(
  argv: readonly string[],
  binds: readonly Bind[],
  network: NetworkSpec,
  env: Readonly<Record<string, string>>,
  report: InstallReport,
  options: PrepareOptions,
  deps: NpxDeps,
  guard: InstallGuard,
  gate?: Promise<unknown>,
  count = true,
): Promise<{ readonly code: number | null; readonly signal: string | null }> {
  const proc = await deps.install(argv, binds, network, env, (event) => report.event(event));
  let unwatch = () => {};
  let over = false;
  const go = async () => {
    if (over) return;
    unwatch = guard.watch(() => void proc.kill('SIGKILL'));
    // npm-gate.js goes on only when told so (stdin that merely ends runs nothing).
    if (gate) await proc.write(new TextEncoder().encode(GO_AHEAD)).catch(() => {});
    void proc.closeStdin();
  };
  if (gate) gate.then(go, () => void proc.kill('SIGKILL'));
  else void go();
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
    over = true;
    unwatch();
    options.signal?.throwIfAborted();
    // Once more now that the step is over: what it wrote after the last count.
    const quota = count ? guard.finalCount() : guard.refusal();
    if (quota) throw quota;
    return status;
  } finally {
    over = true;
    unwatch();
    options.signal?.removeEventListener('abort', abort);
  }
}
