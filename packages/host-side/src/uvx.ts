import { createHash } from 'node:crypto';
import { fchmodSync, fchownSync, mkdirSync, mkdtempSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  PinChangedError,
  type PrepareOptions,
  type PythonDist,
  type PythonPin,
  readPinLock,
  SandboxFailureError,
  SetupFailedError,
  updatePythonPins,
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
import type { StartedWorker, UvxJob } from './install-job.js';
import { InstallReport } from './install-report.js';
import { awaitInstallWorker } from './install-wait.js';
import { writeInstalling } from './npx/cache-status.js';
import { cacheUsage, writeUsage } from './npx/cache-usage.js';
import { dropOwner, OWNER, PREFIX, sweepStaging, waitForOthers } from './npx/entries.js';
import { cacheFullError, installBudget, installQuota } from './npx/quota.js';
import { runStep } from './npx/steps.js';
import type { NpxDeps } from './npx/types.js';
import { InstallGuard } from './npx/watchdog.js';
import { PythonTooOldError, uvFailure } from './uvx/failure.js';
import { parsePythonIndex, userPythonIndex } from './uvx/index-config.js';
import { managedPythons, satisfies } from './uvx/managed-pythons.js';
import { parseCompiled, requirementsText } from './uvx/resolved.js';
import { parseUvxCommand, type UvxCommand } from './uvx/spec.js';
import { removeSetAside, setStepCacheAside, stepCacheEnv } from './uvx/step-cache.js';
import { findUvTools, type UvTools, withPython } from './uvx/tools.js';
import type { Bind } from './view.js';

export { DEFAULT_PYTHON_INDEX, type PythonIndex, userPythonIndex } from './uvx/index-config.js';
export { isUvxCommand, parseUvxCommand, type UvxCommand } from './uvx/spec.js';

/** Where uvx environments appear inside the sandbox (under the hidden, empty /run). */
export const SANDBOX_UV_ROOT = '/run/mcp-sandbox/uv';
/** The host-written inputs of an install (the requirements with hashes), read-only. */
const SANDBOX_UV_INPUT = '/run/mcp-sandbox/uv-input';
const MARKER = 'install.json';
const INPUT = 'input';
const LAYOUT = 'uv1';

/** uvx's environments: beside npm's install cache, under the same rules (host-only writes). */
export function uvCacheRoot(npmCacheRoot: string): string {
  return join(dirname(npmCacheRoot), 'uv');
}

export interface UvxDeps extends Omit<NpxDeps, 'pin' | 'background'> {
  /** The install cache of uvx environments (a sibling of npm's). */
  readonly uvCacheRoot: string;
  /** The pin lock npm's pins are in. */
  readonly lockFile: string;
  /** The index, as the start that asked for this install chose it (the install worker). */
  readonly index?: string;
  /**
   * Runs a first install in a detached worker (as npm's), which outlives an abandoned start; the
   * worker itself installs in its own process (no `background`).
   */
  readonly background?: (job: UvxJob) => StartedWorker;
  /**
   * Runs a tidying task once the start waiting for this install has its answer (the install
   * worker hands it its own queue); without it, the task runs at once.
   */
  readonly later?: (task: () => void) => void;
}

export interface PreparedUvx {
  readonly command: readonly string[];
  /** The environment, read-only, and what of the home uv's Python needs (read-only). */
  readonly binds: readonly Bind[];
}

interface UvEntry {
  readonly requirement: string;
  readonly index: string;
  readonly bin: string;
  readonly digest: string;
}

/** The hosts the install may reach: the index, and for PyPI the host its files are served from. */
function indexGrants(index: string): string[] {
  const url = new URL(index);
  const port = url.port || (url.protocol === 'http:' ? '80' : '443');
  const grants = [`${url.hostname}:${port}`];
  if (url.hostname === 'pypi.org') grants.push('files.pythonhosted.org:443');
  return grants;
}

const digestOf = (dists: readonly PythonDist[]) =>
  `sha256-${createHash('sha256').update(requirementsText(dists)).digest('hex')}`;

/**
 * Turns `uvx [--from pkg] cmd args…` into the console script of an environment installed once,
 * in the sandbox with egress to the index alone, pinned (every resolved distribution with its
 * hashes) in the pin lock; a warm start reads the pin and the entry and touches no network.
 */
export async function prepareUvx(
  command: readonly string[],
  options: PrepareOptions,
  deps: UvxDeps,
): Promise<PreparedUvx | undefined> {
  const parsed = parseUvxCommand(command);
  if (!parsed) return undefined;
  // Validated once here: the asking start's choice (the install worker), else the user's settings.
  const index = (
    deps.index ? parsePythonIndex(deps.index, 'the install job') : userPythonIndex(deps.cache.hostEnv)
  ).url;
  const env = deps.cache.hostEnv;
  const host = findUvTools(env);
  // The host's python3 first, then the user's uv-managed Pythons, each an entry of its own.
  const choices = [
    host,
    ...managedPythons(env, deps.cache.userCache?.writable ?? [])
      .filter((choice) => choice.python !== host.python)
      .map((choice) => withPython(host, choice, env)),
  ];
  const keys = choices.map((tools) =>
    createHash('sha256')
      .update(`${LAYOUT}\n${index}\n${parsed.requirement}\n${tools.python}\n${tools.pythonVersion}`)
      .digest('hex')
      .slice(0, 24),
  );
  mkdirSync(deps.uvCacheRoot, { recursive: true, mode: deps.runAs ? 0o755 : 0o700 });
  const root = openOwnedDir(deps.uvCacheRoot);
  try {
    let found = findEntry(root, keys);
    let cache: 'hit' | 'stored' = 'hit';
    if (!found) {
      sweepStaging(root);
      // Another start's install (its worker, perhaps of a start the client gave up on) of the same.
      await waitForOthers(root, keys[0] ?? '', options, (text) => deps.logger.info(text), readUvEntry);
      found = findEntry(root, keys);
    }
    if (!found) {
      found = await firstInstall(root, keys, parsed, { index, choices }, options, deps);
      cache = 'stored';
    }
    const { entry, at: chosen } = found;
    const key = keys[chosen] ?? '';
    const tools = choices[chosen] ?? host;
    const inside = `${SANDBOX_UV_ROOT}/${key}`;
    const entryPath = join(deps.uvCacheRoot, key);
    deps.onEvent?.({ type: 'prepare', cache, spec: parsed.requirement, entry: entryPath });
    const pinned = findPin(deps.lockFile, index, parsed.requirement);
    if (!pinned || digestOf(pinned.dists) !== entry.digest) {
      throw new PinChangedError(
        `the installed environment of ${parsed.requirement} (${entryPath}) is not what the pin lock ${deps.lockFile} ` +
          `records for it from ${index}; refusing to start it. Remove the entry (rm -rf ${entryPath}) to install the pinned set`,
      );
    }
    return {
      // By the venv's python, not the script's `#!` line: an engine that shows paths in place
      // made the venv at the staging path, which the rename into the cache changed.
      command: [`${inside}/venv/bin/python`, `${inside}/venv/bin/${entry.bin}`, ...parsed.args],
      binds: [{ source: join(entryPath, PREFIX), dest: inside, mode: 'ro' }, ...tools.binds],
    };
  } finally {
    closeDir(root);
  }
}

interface Found {
  readonly entry: UvEntry;
  /** Which Python (of the choices) it was made with. */
  readonly at: number;
}

/** The first complete entry among the Pythons' keys, in their order. */
function findEntry(root: OpenDir, keys: readonly string[]): Found | undefined {
  for (const [at, key] of keys.entries()) {
    const entry = readUvEntry(root, key);
    if (entry) return { entry, at };
  }
  return undefined;
}

/**
 * The first install: in the detached worker when there is one (a start the client abandons
 * keeps its progress, and the next start waits for it or finds it done), else here: with the
 * host's Python, and when the package refuses it, with the newest uv-managed one that fits.
 */
async function firstInstall(
  root: OpenDir,
  keys: readonly string[],
  parsed: UvxCommand,
  source: { readonly index: string; readonly choices: readonly UvTools[] },
  options: PrepareOptions,
  deps: UvxDeps,
): Promise<Found> {
  const { index, choices } = source;
  const say = (text: string) => deps.logger.info(text);
  if (!deps.background) {
    const pin = findPin(deps.lockFile, index, parsed.requirement);
    const attempt = (at: number) =>
      install(root, keys[at] ?? '', parsed, { index, pin, tools: choices[at] ?? choices[0]! }, options, deps);
    try {
      return { entry: await attempt(0), at: 0 };
    } catch (error) {
      const need = error instanceof PythonTooOldError ? error.need : undefined;
      const at = need ? choices.findIndex((tools, i) => i > 0 && satisfies(tools.pythonVersion, need)) : -1;
      if (!need || at < 0) throw error;
      say(
        `${parsed.requirement} needs Python ${need.op}${need.version}: using uv's Python ${choices[at]?.pythonVersion}`,
      );
      return { entry: await attempt(at), at };
    }
  }
  const grants = [...indexGrants(index), ...(deps.cache.installHosts ?? [])];
  say(`installing ${parsed.requirement} from ${index} (network: ${grants.join(', ')} only)`);
  say(
    'a first install can take minutes: it goes on if the client gives up or times out; ' +
      'then start the server again',
  );
  const job = { requirement: parsed.requirement, bin: parsed.bin, index };
  await awaitInstallWorker(deps.background(job), options, say);
  const found = findEntry(root, keys);
  if (!found) {
    throw new SandboxFailureError(
      `the install of ${parsed.requirement} ended, but its environment is not complete`,
      { code: 'E_PREPARE' },
    );
  }
  return found;
}

function findPin(lockFile: string, index: string, requirement: string): PythonPin | undefined {
  return readPinLock(lockFile).python.find((pin) => pin.index === index && pin.requirement === requirement);
}

function readUvEntry(root: OpenDir, key: string): UvEntry | undefined {
  const entry = openDirAt(root, key);
  if (!entry) return undefined;
  try {
    const text = readFileAt(entry, [MARKER], 64 * 1024)?.toString('utf8');
    const value = text ? (JSON.parse(text) as Partial<UvEntry>) : undefined;
    if (!value || typeof value.bin !== 'string' || typeof value.digest !== 'string') return undefined;
    if (typeof value.requirement !== 'string' || typeof value.index !== 'string') return undefined;
    if (!lstatAt(entry, [PREFIX, 'venv', 'bin', value.bin])) return undefined;
    return value as UvEntry;
  } catch {
    return undefined;
  } finally {
    closeDir(entry);
  }
}

interface Source {
  readonly index: string;
  readonly pin: PythonPin | undefined;
  readonly tools: UvTools;
}

/**
 * Installs into `<key>.tmp-…/pkg` and renames it into place. Unpinned: `uv pip compile
 * --generate-hashes` first (sdists build here, in the sandbox), and its set is pinned. Then a venv
 * from the host's Python and `uv pip install --require-hashes` of exactly the pinned set.
 */
async function install(
  root: OpenDir,
  key: string,
  parsed: UvxCommand,
  source: Source,
  options: PrepareOptions,
  deps: UvxDeps,
): Promise<UvEntry> {
  const { index, tools } = source;
  const inside = `${SANDBOX_UV_ROOT}/${key}`;
  const stagingName = basename(mkdtempSync(at(root.fd, `${key}.tmp-`)));
  let dirs: StagingDirs | undefined;
  try {
    dirs = openStaging(root, stagingName, deps.runAs);
    writeInstalling(dirs.staging, parsed.requirement);
    const { staging, prefix, input } = dirs;
    const quota = deps.cache.quota ?? installQuota(deps.cache.hostEnv);
    const budget = installBudget(quota, cacheUsage(root, quota, stagingName), deps.uvCacheRoot);
    const full = cacheFullError(parsed.requirement, budget);
    if (full) throw full;
    const guard = new InstallGuard(prefix, budget, parsed.requirement);
    // `--install-allow-net` hosts too: build code that downloads what it needs, granted by the user.
    const grants = [...indexGrants(index), ...(deps.cache.installHosts ?? [])];
    const step = stepRunner({ parsed, source, inside, stagingName, grants, guard }, options, deps);
    const common = ['--no-config', '--index-url', index, '--python', tools.python];
    const dists =
      source.pin?.dists ??
      (await resolveAndPin({ parsed, index, inside, common, grants, prefix, input, step }, deps));
    writeFileAt(input, 'requirements.txt', requirementsText(dists));
    deps.logger.info(
      `installing ${parsed.requirement} (${dists.length} distributions, pinned) with Python ${tools.pythonVersion}`,
    );
    await step(
      ['uv', 'venv', '--no-config', '--python', tools.python, '--quiet', `${inside}/venv`],
      'making the environment',
    );
    const venvPython = ['--python', `${inside}/venv/bin/python`];
    const exact = ['--require-hashes', '--no-deps', '--quiet', '-r', `${SANDBOX_UV_INPUT}/requirements.txt`];
    await step(['uv', 'pip', 'install', ...common.slice(0, 3), ...venvPython, ...exact], 'installing');
    setStepCacheAside(prefix, staging);
    const entry = { requirement: parsed.requirement, index, bin: parsed.bin, digest: digestOf(dists) };
    const published = publish(root, key, stagingName, { staging, prefix, guard }, entry, deps.runAs);
    const tidy = () => removeSetAside(deps.uvCacheRoot, key);
    if (deps.later) deps.later(tidy);
    else tidy();
    return published;
  } catch (error) {
    try {
      removeAt(root, stagingName, undefined, { last: OWNER });
    } catch {
      // best effort: a later install starts from a fresh staging directory
    }
    throw error;
  } finally {
    closeDir(dirs?.input);
    closeDir(dirs?.prefix);
    closeDir(dirs?.staging);
  }
}

interface StepContext {
  readonly parsed: UvxCommand;
  readonly source: Source;
  readonly inside: string;
  readonly stagingName: string;
  readonly grants: readonly string[];
  readonly guard: InstallGuard;
}

/**
 * Runs one uv command of the install in the sandbox: the prefix read-write and the host's
 * inputs read-only, egress to the index alone, uv's own settings only from here (no config
 * file, no Python download, a cache of this install's own inside the prefix, never the user's),
 * and no variable but `--install-env`'s.
 */
function stepRunner(
  c: StepContext,
  options: PrepareOptions,
  deps: UvxDeps,
): (argv: string[], what: string) => Promise<void> {
  const { tools } = c.source;
  const binds: Bind[] = [
    { source: join(deps.uvCacheRoot, c.stagingName, PREFIX), dest: c.inside, mode: 'rw' },
    { source: join(deps.uvCacheRoot, c.stagingName, INPUT), dest: SANDBOX_UV_INPUT, mode: 'ro' },
    ...tools.binds,
  ];
  const env: Record<string, string> = {
    ...deps.cache.installEnv,
    UV_NO_CONFIG: '1',
    UV_PYTHON_DOWNLOADS: 'never',
    ...stepCacheEnv(c.inside),
  };
  const report = new InstallReport();
  const network = { allow: [...c.grants] };
  return async (argv, what) => {
    // uv by the real path found on the host (a shim on PATH would need the home).
    const uvArgv = [tools.uv, ...argv.slice(1)];
    const { background: _, ...stepDeps } = deps;
    const status = await runStep(uvArgv, binds, network, env, report, options, stepDeps, c.guard);
    if (status.code !== 0)
      throw uvFailure(c.parsed, what, status, report, tools, c.source.pin !== undefined, c.grants);
  };
}

interface StagingDirs {
  readonly staging: OpenDir;
  readonly prefix: OpenDir;
  readonly input: OpenDir;
}

/**
 * The staging directory, opened without following and checked as ours, with the prefix uv
 * writes (owned by the sandbox's user) and the host's inputs beside it. On a throw, what was
 * opened is closed here; the caller removes the directory.
 */
function openStaging(root: OpenDir, stagingName: string, runAs: UvxDeps['runAs']): StagingDirs {
  const staging = openDirAt(root, stagingName);
  let prefix: OpenDir | undefined;
  let input: OpenDir | undefined;
  try {
    if (!staging || staging.stat.uid !== (process.getuid?.() ?? 0)) {
      throw new HostFsError(`the staging directory ${stagingName} is not ours`);
    }
    fchmodSync(staging.fd, runAs ? 0o711 : 0o700);
    writeFileAt(staging, OWNER, String(process.pid));
    mkdirSync(at(staging.fd, PREFIX), { mode: 0o700 });
    mkdirSync(at(staging.fd, INPUT), { mode: 0o755 });
    prefix = openDirAt(staging, PREFIX);
    input = openDirAt(staging, INPUT);
    if (!prefix || !input) throw new HostFsError('the install prefix vanished');
    if (runAs) fchownSync(prefix.fd, runAs.uid, runAs.gid);
    return { staging, prefix, input };
  } catch (error) {
    closeDir(input);
    closeDir(prefix);
    closeDir(staging);
    throw error;
  }
}

interface Resolving {
  readonly parsed: UvxCommand;
  readonly index: string;
  readonly inside: string;
  readonly common: readonly string[];
  readonly grants: readonly string[];
  readonly prefix: OpenDir;
  readonly input: OpenDir;
  readonly step: (argv: string[], what: string) => Promise<void>;
}

/**
 * First install of a requirement: `uv pip compile --generate-hashes` in the sandbox (an sdist's
 * build code runs there to give its metadata), its output read without following links and
 * parsed in full, and the set pinned.
 */
async function resolveAndPin(r: Resolving, deps: UvxDeps): Promise<readonly PythonDist[]> {
  const { parsed, index, inside } = r;
  writeFileAt(r.input, 'requirements.in', `${parsed.requirement}\n`);
  deps.logger.info(`resolving ${parsed.requirement} against ${index} (network: ${r.grants.join(', ')} only)`);
  const compile = ['uv', 'pip', 'compile', ...r.common, '--generate-hashes', '--no-header', '--no-annotate'];
  await r.step(
    [...compile, '--quiet', '-o', `${inside}/resolved.txt`, `${SANDBOX_UV_INPUT}/requirements.in`],
    'resolving',
  );
  const resolved = parseCompiled(readFileAt(r.prefix, ['resolved.txt'], 4 * 2 ** 20)?.toString('utf8') ?? '');
  if (!resolved) {
    throw new SandboxFailureError(
      `uv's resolution of ${parsed.requirement} is not a list of pinned, hashed distributions`,
      { code: 'E_PREPARE' },
    );
  }
  return recordPin(deps, index, parsed.requirement, resolved);
}

/** Pins the resolved set under the lock's mutex; a pin another start wrote meanwhile wins. */
function recordPin(
  deps: UvxDeps,
  index: string,
  requirement: string,
  resolved: PythonDist[],
): readonly PythonDist[] {
  let result: readonly PythonDist[] = resolved;
  updatePythonPins(deps.lockFile, (pins) => {
    const theirs = pins.find((pin) => pin.index === index && pin.requirement === requirement);
    if (theirs) {
      result = theirs.dists;
      return pins;
    }
    return [...pins, { index, requirement, dists: resolved, pinnedAt: new Date().toISOString() }];
  });
  if (result === resolved) {
    const top = resolved
      .map((dist) => `${dist.name}==${dist.version}`)
      .slice(0, 3)
      .join(', ');
    deps.logger.info(
      `pinned ${requirement} from ${index} (${resolved.length} distributions: ${top}…) in ${deps.lockFile}`,
    );
  }
  return result;
}

/** Seals the environment, writes the marker beside it and moves the staging directory into place. */
function publish(
  root: OpenDir,
  key: string,
  stagingName: string,
  dirs: { readonly staging: OpenDir; readonly prefix: OpenDir; readonly guard: InstallGuard },
  entry: UvEntry,
  runAs: UvxDeps['runAs'],
): UvEntry {
  const { staging, prefix } = dirs;
  const counter = dirs.guard.counter();
  sealTree(prefix, {
    fromUid: runAs?.uid ?? process.getuid?.() ?? 0,
    ...(runAs ? { to: { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 } } : {}),
    counter,
  });
  fchmodSync(prefix.fd, 0o755);
  if (!lstatAt(prefix, ['venv', 'bin', entry.bin])) {
    throw new SetupFailedError(
      `${entry.requirement} has no command ${entry.bin}; name the package with --from (uvx --from <pkg> <command>)`,
      1,
    );
  }
  writeUsage(staging, counter);
  writeFileAt(staging, MARKER, `${JSON.stringify(entry)}\n`);
  fchmodSync(staging.fd, 0o755);
  try {
    renameAt(root, stagingName, key);
  } catch (error) {
    const theirs = readUvEntry(root, key);
    if (!theirs) throw error;
    removeAt(root, stagingName);
    return theirs;
  }
  dropOwner(staging);
  return entry;
}
