import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fchmodSync, fchownSync, mkdirSync, mkdtempSync, readdirSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { ChildSandboxProcess as SpawnedProcess } from '@mcpsandbox/core';
import {
  type Logger,
  type NetworkSpec,
  type PrepareOptions,
  type RegistryTrust,
  type SandboxEvent,
  SandboxFailureError,
  SetupFailedError,
} from '@mcpsandbox/core';
import {
  at,
  closeDir,
  HostFsError,
  lstatAt,
  type OpenDir,
  openDirAt,
  openOwnedDir,
  readFileAt,
  removeAt,
  renameAt,
  sealTree,
  writeFileAt,
} from './host-fs.js';
import type { StartedWorker } from './install-job.js';
import { InstallReport } from './install-report.js';
import {
  type CachePlaces,
  checkUserNpmCache,
  defaultUserNpmCache,
  type UserNpmCache,
} from './user-npm-cache.js';
import type { Bind } from './view.js';

export const DEFAULT_NPM_REGISTRY = 'https://registry.npmjs.org/';

/** Where installed packages appear inside the sandbox (under the hidden, empty /run). */
export const SANDBOX_NPM_ROOT = '/run/mcp-sandbox/npm';
/** Where the user's npm cache appears to the fetch step (and to no other step). */
export const SANDBOX_NPM_CACHE = '/run/mcp-sandbox/npm-cache';

export interface NpxCacheOptions {
  /** Host directory of the persistent cache, one entry per registry and package spec. */
  readonly cacheRoot: string;
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  /** Registry URL; default: the host's `npm config get registry`. */
  readonly registry?: string;
  /** More hosts the install step may reach (`--install-allow-net`), for packages that download at install. */
  readonly installHosts?: readonly string[];
  /** Where the output of a failed install is kept for the user (default: `logs` next to the cache root). */
  readonly logDir?: string;
  /** `--install-env`: variables the install step (only) gets, never the server. */
  readonly installEnv?: Readonly<Record<string, string>>;
  /**
   * Let the fetch half of an install use the user's own npm cache (see user-npm-cache.ts),
   * kept clear of these places; absent: every install downloads into a private cache.
   */
  readonly userCache?: Omit<CachePlaces, 'ownerUid' | 'installCacheRoot'>;
}

export interface NpxCommand {
  readonly spec: string;
  readonly args: readonly string[];
}

/**
 * Recognizes `npx -y <pkg> [args…]` and `npx --yes <pkg> [args…]`. Anything else (other npx
 * flags, no `--yes`) is left alone and runs as given.
 */
export function parseNpxCommand(command: readonly string[]): NpxCommand | undefined {
  const [program, ...rest] = command;
  if (program === undefined || basename(program) !== 'npx') return undefined;
  let yes = false;
  let index = 0;
  for (; index < rest.length; index++) {
    const arg = rest[index]!;
    if (arg === '-y' || arg === '--yes') yes = true;
    else if (arg.startsWith('-')) return undefined;
    else break;
  }
  const spec = rest[index];
  if (!yes || spec === undefined) return undefined;
  const args = rest.slice(index + 1);
  return { spec, args: args[0] === '--' ? args.slice(1) : args };
}

/** Cache layout version: part of the key, so that entries of an older layout are never read. */
const LAYOUT = 'v2';

export function cacheKey(registry: string, spec: string): string {
  return createHash('sha256').update(`${LAYOUT}\n${registry}\n${spec}`).digest('hex').slice(0, 24);
}

/**
 * A cache entry, `<cacheRoot>/<key>/`, is a directory only the host ever writes. It holds the
 * install marker next to the install, never inside it:
 *
 *   <key>/install.json   written by the host (what was installed, which binary to run)
 *   <key>/pkg/           npm's prefix: the only directory the install step may write
 *
 * The install happens in `<key>.tmp-…/` (same layout), which moves to `<key>` in one rename.
 */
const MARKER = 'install.json';
const PREFIX = 'pkg';
/** In a staging directory only: the pid of the process installing there, for the sweep. */
const OWNER = 'owner-pid';
const STAGING = /^[0-9a-f]{24}\.tmp-/;
const MAX_MANIFEST_BYTES = 4 * 2 ** 20;

interface Installed {
  readonly spec: string;
  readonly registry: string;
  readonly name: string;
  readonly bin: string;
}

export interface NpxDeps {
  readonly cache: NpxCacheOptions;
  readonly runAs: { readonly uid: number; readonly gid: number } | undefined;
  readonly onEvent: ((event: SandboxEvent) => void) | undefined;
  /** Where mcp-sandbox's own progress lines go (stderr, through the bridge's logger). */
  readonly logger: Logger;
  /** Turns the command's spec into the exact one to install (pinned installs); absent: as given. */
  readonly pin?: (spec: string, registry: string, trust: RegistryTrust) => Promise<string>;
  /**
   * Runs an install step in the sandbox with `binds` and only `network` for egress: no other
   * environment, no mounts of the spec, no other cache entry.
   */
  readonly install: (
    argv: readonly string[],
    binds: readonly Bind[],
    network: NetworkSpec,
    env: Readonly<Record<string, string>>,
    onEvent: (event: SandboxEvent) => void,
  ) => Promise<SpawnedProcess>;
  /**
   * Runs the install in a detached process of its own (see install-worker.ts) so that a start
   * the client abandons still completes it; absent: in this process.
   */
  readonly background?: (spec: string, registry: string) => StartedWorker;
}

/**
 * What a step that installs packages needs to reach the registry as the host's npm would: the
 * registry's `host:port` grant, its URL and TLS trust as npm settings, and the CA files to show.
 * Never the host npm's credentials.
 */
export async function registryAccess(
  cache: NpxCacheOptions,
): Promise<{ grant: string; env: Record<string, string>; binds: Bind[] }> {
  const npmConfig = await hostNpmConfig(cache.hostEnv);
  const registry = normalizeRegistry(cache.registry ?? npmConfig.registry);
  const url = new URL(registry);
  const port = url.port || (url.protocol === 'http:' ? '80' : '443');
  const extraCa = cache.hostEnv.NODE_EXTRA_CA_CERTS;
  const env: Record<string, string> = { npm_config_registry: registry };
  if (!npmConfig.strictSsl) env.npm_config_strict_ssl = 'false';
  if (npmConfig.cafile) env.npm_config_cafile = npmConfig.cafile;
  if (extraCa) env.NODE_EXTRA_CA_CERTS = extraCa;
  const binds: Bind[] = [];
  for (const file of [npmConfig.cafile, extraCa]) {
    if (file?.startsWith('/')) binds.push({ source: file, dest: file, mode: 'ro' });
  }
  return { grant: `${url.hostname}:${port}`, env, binds };
}

/** npm's rule for package names; anything else is not used as a path, even inside the sandbox. */
const PACKAGE_NAME = /^(@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/;

export interface PreparedNpx {
  readonly command: readonly string[];
  /** The cache entry, read-only. */
  readonly bind?: Bind;
  /** The server's own package: its cache key and its directory inside the sandbox. */
  readonly package?: { readonly key: string; readonly dir: string };
}

/**
 * Turns `npx -y pkg args…` into the installed binary: installs `pkg` once, inside the sandbox
 * with egress to the registry alone, into a persistent per-user cache entry; a warm entry is
 * used as is, with no network. The returned bind mounts the entry read-only for later execs.
 *
 * Everything below `pkg/` was written by the package's own install scripts: the host reads it
 * only through no-follow opens relative to directories it created ({@link readFileAt}), and
 * writes nothing there.
 */
export async function prepareNpx(
  command: readonly string[],
  options: PrepareOptions,
  deps: NpxDeps,
): Promise<PreparedNpx> {
  const parsed = parseNpxCommand(command);
  if (!parsed) return { command };
  const npmConfig = await hostNpmConfig(deps.cache.hostEnv);
  const registry = normalizeRegistry(deps.cache.registry ?? npmConfig.registry);
  // Pinned installs: the exact version recorded on first use (or a refusal), never "latest now".
  const spec = deps.pin
    ? await deps.pin(parsed.spec, registry, {
        caFiles: [npmConfig.cafile, deps.cache.hostEnv.NODE_EXTRA_CA_CERTS],
        strictSsl: npmConfig.strictSsl,
      })
    : parsed.spec;
  const key = cacheKey(registry, spec);
  const entry = join(deps.cache.cacheRoot, key);
  const inside = `${SANDBOX_NPM_ROOT}/${key}`;
  // mcp-sandbox's own words go to its logger: the prepare stream is the sandbox's output.
  const say = (text: string) => deps.logger.info(text);

  mkdirSync(deps.cache.cacheRoot, { recursive: true, mode: deps.runAs ? 0o755 : 0o700 });
  // The cache root must be ours and writable by no one else: every rename below relies on it.
  const root = openOwnedDir(deps.cache.cacheRoot);
  try {
    let installed = readEntry(root, key);
    // An entry appears by one rename, marker included: one without a valid marker was just
    // renamed into place by another session (read again), or was damaged from outside. A
    // damaged entry is left for the user to remove rather than removed under a session using it.
    if (!installed && lstatAt(root, [key])) {
      installed = readEntry(root, key);
      if (!installed) {
        throw new SandboxFailureError(
          `the install cache entry ${entry} is damaged (no valid ${MARKER}); remove it (rm -rf ${entry}) and start again`,
          { code: 'E_PREPARE' },
        );
      }
    }
    if (installed) {
      deps.onEvent?.({ type: 'prepare', cache: 'hit', spec, entry });
    } else {
      sweepStaging(root);
      const registryUrl = new URL(registry);
      const port = registryUrl.port || (registryUrl.protocol === 'http:' ? '80' : '443');
      const grant = `${registryUrl.hostname}:${port}`;
      installed = await waitForOthers(root, key, options, say);
      if (installed) deps.onEvent?.({ type: 'prepare', cache: 'hit', spec, entry });
      else {
        say(`installing ${spec} from ${registry} into ${entry} (network: ${grant} only)`);
        deps.onEvent?.({ type: 'prepare', cache: 'miss', spec, entry, network: [grant] });
        // Checked here too, so that a fallback is said where the user sees it (not in the worker).
        sharedCache(deps, npmConfig);
        installed = deps.background
          ? await installInBackground(root, key, spec, registry, options, deps.background)
          : await install(root, key, spec, registry, grant, npmConfig, options, deps);
        deps.onEvent?.({ type: 'prepare', cache: 'stored', spec, entry });
      }
    }
    return {
      command: [`${inside}/node_modules/.bin/${installed.bin}`, ...parsed.args],
      bind: { source: join(entry, PREFIX), dest: inside, mode: 'ro' },
      ...(PACKAGE_NAME.test(installed.name)
        ? { package: { key, dir: `${inside}/node_modules/${installed.name}` } }
        : {}),
    };
  } finally {
    closeDir(root);
  }
}

async function install(
  root: OpenDir,
  key: string,
  spec: string,
  registry: string,
  grant: string,
  npmConfig: HostNpmConfig,
  options: PrepareOptions,
  deps: NpxDeps,
): Promise<Installed> {
  const inside = `${SANDBOX_NPM_ROOT}/${key}`;
  const cacheRoot = deps.cache.cacheRoot;
  // mkdtemp relative to the cache root we checked; then opened without following, and checked.
  const stagingName = basename(mkdtempSync(at(root.fd, `${key}.tmp-`)));
  let staging: OpenDir | undefined;
  let prefix: OpenDir | undefined;
  try {
    staging = openDirAt(root, stagingName);
    if (!staging || staging.stat.uid !== (process.getuid?.() ?? 0)) {
      throw new HostFsError(`the staging directory ${stagingName} is not ours`);
    }
    // Reachable (not listable) by the sandbox user, who must get to pkg/ to bind it.
    fchmodSync(staging.fd, deps.runAs ? 0o711 : 0o700);
    writeFileAt(staging, OWNER, String(process.pid));
    mkdirSync(at(staging.fd, PREFIX), { mode: 0o700 });
    prefix = openDirAt(staging, PREFIX);
    if (!prefix) throw new HostFsError('the install prefix vanished');
    if (deps.runAs) fchownSync(prefix.fd, deps.runAs.uid, deps.runAs.gid);
    const steps = installSteps(inside, spec, registry, npmConfig, sharedCache(deps, npmConfig));
    // --prefix moves npm's global config out of sight: carry the host's CA trust over explicitly.
    const extraCa = deps.cache.hostEnv.NODE_EXTRA_CA_CERTS;
    // Writable: this install's own prefix, and for the fetch alone the user's npm cache. bwrap
    // resolves the prefix path, whose every component the host created and only the host can
    // change (the root, the staging dir, pkg); the cache path was checked just now.
    const prefixBind: Bind = { source: join(cacheRoot, stagingName, PREFIX), dest: inside, mode: 'rw' };
    const trust: Bind[] = [];
    for (const file of [npmConfig.cafile, extraCa]) {
      if (file?.startsWith('/')) trust.push({ source: file, dest: file, mode: 'ro' });
    }
    const env: Record<string, string> = {
      ...deps.cache.installEnv,
      ...(extraCa ? { NODE_EXTRA_CA_CERTS: extraCa } : {}),
    };
    const report = new InstallReport();
    for (const step of steps) {
      const binds = [prefixBind, ...trust, ...(step.cache ? [step.cache] : [])];
      // The fetch reaches the registry only; the scripts as today's install scripts do.
      const hosts = step.scripts ? [grant, ...(deps.cache.installHosts ?? [])] : [grant];
      const status = await runStep(step.argv, binds, { allow: hosts }, env, report, options, deps);
      if (status.code !== 0) throw installFailure(spec, grant, status, report, deps.cache);
    }
    // Take the tree over before reading it: as root it becomes ours, so no process of the
    // sandbox's uid can change it any more; in every case setuid bits and g/o write go.
    sealTree(prefix, {
      fromUid: deps.runAs?.uid ?? process.getuid?.() ?? 0,
      ...(deps.runAs ? { to: { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 } } : {}),
    });
    fchmodSync(prefix.fd, 0o755);
    const installed = describeInstall(prefix, spec, registry);
    // The marker goes next to pkg/, in the staging directory the sandbox never saw.
    writeFileAt(staging, MARKER, `${JSON.stringify(installed)}\n`);
    unlinkSync(at(staging.fd, OWNER));
    fchmodSync(staging.fd, 0o755);
    try {
      renameAt(root, stagingName, key);
    } catch (error) {
      // Another session installed the same entry meanwhile: use theirs.
      const theirs = readEntry(root, key);
      if (!theirs) throw error;
      removeAt(root, stagingName);
      return theirs;
    }
    return installed;
  } catch (error) {
    try {
      removeAt(root, stagingName, undefined, { last: OWNER });
    } catch {
      // best effort: a later install of the same key starts from a fresh staging directory
    }
    throw error;
  } finally {
    closeDir(prefix);
    closeDir(staging);
  }
}

interface InstallStep {
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
function installSteps(
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
function sharedCache(deps: NpxDeps, npmConfig: HostNpmConfig): UserNpmCache | undefined {
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
async function runStep(
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

/**
 * Another start (or its background install) is installing the same entry: wait for it rather
 * than download the same packages again beside it. Undefined when no live install of the key
 * is left and the entry is still missing: then this start installs.
 */
async function waitForOthers(
  root: OpenDir,
  key: string,
  options: PrepareOptions,
  say: (text: string) => void,
): Promise<Installed | undefined> {
  let told = false;
  for (;;) {
    const installed = readEntry(root, key);
    if (installed) return installed;
    const owner = liveInstaller(root, key);
    // Gone: finished (renamed into place just now) or died; read once more to tell which.
    if (owner === undefined) return readEntry(root, key);
    if (!told) say(`waiting for the install of this package already under way (process ${owner})`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, 250));
    options.signal?.throwIfAborted();
  }
}

/** The pid of a live process installing `key` (from its staging directory's owner file), if any. */
function liveInstaller(root: OpenDir, key: string): number | undefined {
  const uid = process.getuid?.() ?? 0;
  for (const name of readdirSync(`/proc/self/fd/${root.fd}`)) {
    if (!name.startsWith(`${key}.tmp-`)) continue;
    const dir = openDirAt(root, name);
    try {
      if (!dir || dir.stat.uid !== uid || (dir.stat.mode & 0o022) !== 0) continue;
      const pid = readFileAt(dir, [OWNER], 32)?.toString('latin1') ?? '';
      if (/^[1-9]\d{0,9}$/.test(pid) && processExists(Number(pid))) return Number(pid);
    } catch {
      // changed meanwhile: not a live install
    } finally {
      closeDir(dir);
    }
  }
  return undefined;
}

/**
 * The install in a detached worker: its output is shown while this start waits; if this start
 * is abandoned (the signal fires), the worker goes on alone and the next start is warm.
 */
async function installInBackground(
  root: OpenDir,
  key: string,
  spec: string,
  registry: string,
  options: PrepareOptions,
  start: (spec: string, registry: string) => StartedWorker,
): Promise<Installed> {
  const worker = start(spec, registry);
  const forward = (async () => {
    try {
      for await (const chunk of worker.stderr) options.stderr(chunk);
    } catch {
      // detached
    }
  })();
  const aborted = new Promise<'aborted'>((resolve) => {
    if (options.signal?.aborted) resolve('aborted');
    options.signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  const result = await Promise.race([worker.result, aborted]);
  if (result === 'aborted') {
    worker.detach();
    options.signal?.throwIfAborted();
    throw new SandboxFailureError('the start was abandoned', { code: 'E_PREPARE' });
  }
  await forward;
  if (!result.ok) {
    if (result.code === 'E_SETUP_FAILED') throw new SetupFailedError(result.message, result.exitCode ?? null);
    throw new SandboxFailureError(result.message, { code: 'E_PREPARE' });
  }
  const installed = readEntry(root, key);
  if (!installed) {
    throw new SandboxFailureError(`the install of ${spec} ended, but its cache entry is not complete`, {
      code: 'E_PREPARE',
    });
  }
  return installed;
}

/**
 * Removes staging directories of installs whose process died (killed mid-install): only ours,
 * writable by no one else, with an owner file read no-follow; removed fd-relative.
 */
function sweepStaging(root: OpenDir): void {
  const uid = process.getuid?.() ?? 0;
  for (const name of readdirSync(`/proc/self/fd/${root.fd}`)) {
    if (!STAGING.test(name)) continue;
    let dir: OpenDir | undefined;
    try {
      dir = openDirAt(root, name);
      if (!dir || dir.stat.uid !== uid || (dir.stat.mode & 0o022) !== 0) continue;
      const pid = readFileAt(dir, [OWNER], 32)?.toString('latin1') ?? '';
      if (!/^[1-9]\d{0,9}$/.test(pid) || processExists(Number(pid))) continue;
      const id = { dev: dir.stat.dev, ino: dir.stat.ino };
      closeDir(dir);
      dir = undefined;
      removeAt(root, name, id, { last: OWNER });
    } catch {
      // changed meanwhile, or not ours: leave it
    } finally {
      closeDir(dir);
    }
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The marker of a complete entry, or undefined. Read relative to the cache root, no symlink followed. */
function readEntry(root: OpenDir, key: string): Installed | undefined {
  const entry = openDirAt(root, key);
  if (!entry) return undefined;
  try {
    const text = readFileAt(entry, [MARKER], 64 * 1024);
    if (!text) return undefined;
    const marker = parseMarker(text.toString('utf8'));
    if (!marker) return undefined;
    const bin = lstatAt(entry, [PREFIX, 'node_modules', '.bin', marker.bin]);
    return bin ? marker : undefined;
  } catch {
    return undefined;
  } finally {
    closeDir(entry);
  }
}

function parseMarker(text: string): Installed | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { spec, registry, name, bin } = value as Record<string, unknown>;
  if (typeof spec !== 'string' || typeof registry !== 'string') return undefined;
  if (typeof name !== 'string' || packageNameParts(name) === undefined) return undefined;
  if (typeof bin !== 'string' || !isBinName(bin)) return undefined;
  return { spec, registry, name, bin };
}

/** `name` or `@scope/name` as path components; undefined for anything else (`..`, slashes). */
function packageNameParts(name: string): string[] | undefined {
  const part = /^[A-Za-z0-9._~-]+$/;
  const parts = name.startsWith('@')
    ? [name.slice(0, name.indexOf('/')), name.slice(name.indexOf('/') + 1)]
    : [name];
  if (name.startsWith('@') && (!name.includes('/') || !part.test(parts[0]!.slice(1)))) return undefined;
  const last = parts[parts.length - 1]!;
  if (!part.test(last) || last === '.' || last === '..' || name.split('/').length > 2) return undefined;
  return parts;
}

function isBinName(bin: string): boolean {
  return /^[A-Za-z0-9@._+~-]+$/.test(bin) && bin !== '.' && bin !== '..';
}

/**
 * Finds the installed package and the binary npx would run: its only bin, or the one named
 * after it. The manifests were written by the install: read without following links, parsed in
 * full, and every name taken from them checked before it becomes part of a path.
 */
function describeInstall(prefix: OpenDir, spec: string, registry: string): Installed {
  const manifest = parseJson(readFileAt(prefix, ['package.json'], MAX_MANIFEST_BYTES)) as {
    dependencies?: Record<string, string>;
  };
  const names = Object.keys(manifest?.dependencies ?? {});
  const name = names[0];
  if (!name || names.length !== 1) {
    throw new SandboxFailureError(`npm did not install exactly one package for ${spec}`, {
      code: 'E_PREPARE',
    });
  }
  const parts = packageNameParts(name);
  if (!parts)
    throw new SandboxFailureError(`npm installed a package with an invalid name for ${spec}`, {
      code: 'E_PREPARE',
    });
  const pkg = parseJson(
    readFileAt(prefix, ['node_modules', ...parts, 'package.json'], MAX_MANIFEST_BYTES),
  ) as {
    bin?: unknown;
  };
  const plain = parts[parts.length - 1]!;
  let bin: string | undefined;
  if (typeof pkg?.bin === 'string') bin = plain;
  else if (pkg?.bin && typeof pkg.bin === 'object') {
    const binNames = Object.keys(pkg.bin);
    bin = binNames.length === 1 ? binNames[0] : binNames.find((n) => n === plain);
  }
  if (!bin || !isBinName(bin)) {
    throw new SandboxFailureError(`${name} has no single binary to run; pass the command explicitly`, {
      code: 'E_PREPARE',
    });
  }
  if (!lstatAt(prefix, ['node_modules', '.bin', bin])) {
    throw new SandboxFailureError(`npm did not link the binary ${bin} of ${name}`, { code: 'E_PREPARE' });
  }
  return { spec, registry, name, bin };
}

function parseJson(bytes: Buffer | undefined): unknown {
  if (!bytes) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new SandboxFailureError('the install left a manifest that is not JSON', {
      code: 'E_PREPARE',
      cause: error,
    });
  }
}

function normalizeRegistry(registry: string): string {
  return registry.endsWith('/') ? registry : `${registry}/`;
}

/** The host npm's registry and TLS trust (never its credentials), which the install inside needs. */
export interface HostNpmConfig {
  readonly registry: string;
  readonly cafile: string | undefined;
  readonly strictSsl: boolean;
  /** npm's cache directory as configured (user-written: checked before any use). */
  readonly cache: string | undefined;
}

const npmConfigs = new Map<string, Promise<HostNpmConfig>>();

/** Asks the host's npm once per process and environment: it takes half a second. */
function hostNpmConfig(hostEnv: Readonly<Record<string, string | undefined>>): Promise<HostNpmConfig> {
  const key = JSON.stringify(
    Object.entries(hostEnv)
      .filter(([name]) => ['HOME', 'PATH', 'XDG_CONFIG_HOME'].includes(name) || /^npm_config_/i.test(name))
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  let config = npmConfigs.get(key);
  if (!config) {
    config = askNpm(hostEnv);
    npmConfigs.set(key, config);
  }
  return config;
}

function askNpm(hostEnv: Readonly<Record<string, string | undefined>>): Promise<HostNpmConfig> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['config', 'get', 'registry', 'cafile', 'strict-ssl', 'cache'],
      { env: { ...hostEnv }, timeout: 15_000 },
      (_error, stdout) => {
        const values = new Map<string, string>();
        for (const line of String(stdout).split('\n')) {
          const at = line.indexOf('=');
          if (at > 0) values.set(line.slice(0, at).trim(), line.slice(at + 1).trim());
        }
        const registry = values.get('registry') ?? '';
        const cafile = values.get('cafile');
        resolve({
          registry: /^https?:\/\//.test(registry) ? registry : DEFAULT_NPM_REGISTRY,
          cafile: cafile && cafile !== 'null' && cafile.startsWith('/') ? cafile : undefined,
          strictSsl: values.get('strict-ssl') !== 'false',
          cache: values.get('cache') ?? (hostEnv.HOME ? defaultUserNpmCache(hostEnv.HOME) : undefined),
        });
      },
    );
  });
}

/**
 * npm's own cause first, then the granted hosts this host could not reach (with why: granting
 * them again would not help), the hosts refused as not granted (with the flag, never one already
 * given), npm's lines, and the log.
 */
function installFailure(
  spec: string,
  grant: string,
  status: { readonly code: number | null; readonly signal: string | null },
  report: InstallReport,
  cache: NpxCacheOptions,
): SetupFailedError {
  const lines = [`installing ${spec} failed (npm exited ${status.code ?? status.signal})`];
  const cause = report.npmCause();
  if (cause !== undefined) lines.push(`cause: ${cause}`);
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
  const said = report.npmSaid();
  if (said.length > 0) lines.push('npm said:', ...said.map((line) => `  ${line}`));
  const name = `install-${spec.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80)}-${new Date().toISOString().replace(/[:.]/g, '-')}.log`;
  const log = report.saveLog(cache.logDir ?? join(dirname(cache.cacheRoot), 'logs'), name);
  if (log) lines.push(`the whole install output: ${log}`);
  return new SetupFailedError(lines.join('\n'), status.code);
}
