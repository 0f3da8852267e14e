/**
 * The npx install step of a sandbox (`prepare()`): the cached install, in the background worker
 * or in this process, and a writable copy of the server's own package over its cache entry.
 */
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  defaultPinLockFile,
  type ExecOptions,
  type PinnedSpec,
  type PrepareOptions,
  pinNpxPackage,
  type RegistryTrust,
  readPinLock,
  type SandboxEvent,
  SandboxFailureError,
} from '@mcpsandbox/core';
import {
  type Bind,
  type HostNpmConfig,
  type InstallJob,
  prepareNpx,
  prepareUvx,
  type StateDirs,
  type UvxJob,
  uvCacheRoot,
} from '@mcpsandbox/host-side';
import type { SpawnedProcess } from '../child-process.js';
import type { SandboxConfig, SpawnExtras } from '../session/config.js';
import {
  type EarlyWorker,
  INSTALL_DEADLINE_MS,
  installWorkerPath,
  spawnInstallWorker,
  startInstallWorker,
} from './launch.js';

/** What the install step needs of its sandbox. */
export interface InstallContext {
  readonly config: SandboxConfig;
  /** The sandbox's own directory on the host. */
  readonly root: string;
  readonly state: StateDirs | undefined;
  /** Binds every later exec gets: prepare() adds the installed package (and its writable copy). */
  readonly extraBinds: Bind[];
  /** Has the server's own start copy its package in first (see {@link PackageCopy}). */
  readonly copyAtStart: (copy: PackageCopy) => void;
  readonly spawn: (
    requested: readonly string[],
    options: ExecOptions,
    extras: SpawnExtras,
  ) => Promise<SpawnedProcess>;
}

/**
 * A copy the server's sandbox makes of its package before the server runs, both paths inside
 * the sandbox: `from` (the install, read-only) into `to` (its writable copy, bound over the
 * package's own directory). Made there rather than in a sandbox of its own, it costs a start no
 * second sandbox; it runs as the server would, with nothing the server cannot reach anyway.
 */
export interface PackageCopy {
  readonly from: string;
  readonly to: string;
}

/** Where the install shows itself a second time, to the copy: the package's own path is the copy. */
const PACKAGE_SOURCE = '/run/mcp-sandbox/package-source';

export async function prepareCommand(
  context: InstallContext,
  command: readonly string[],
  options: PrepareOptions,
): Promise<readonly string[]> {
  const inline = context.config.inlineInstall;
  const worker = inline ? undefined : installWorkerPath();
  const npm = context.config.npm;
  const install = (
    argv: readonly string[],
    binds: readonly Bind[],
    network: ExecOptions['network'],
    env: Readonly<Record<string, string>>,
    onEvent: (event: SandboxEvent) => void,
  ) => context.spawn(argv, { ...(network ? { network } : {}), env }, { binds, install: true, onEvent });
  // uvx: an environment of its own beside npm's cache, pinned in the same lock.
  const uvx = await prepareUvx(command, options, {
    cache: npm,
    runAs: context.config.info.runAs,
    onEvent: context.config.spec.onEvent,
    logger: context.config.logger,
    uvCacheRoot: uvCacheRoot(npm.cacheRoot),
    lockFile: defaultPinLockFile(context.config.hostEnv, context.config.hostHome),
    ...(context.config.pythonIndex ? { index: context.config.pythonIndex } : {}),
    ...(context.config.deferTidying ? { later: context.config.deferTidying } : {}),
    ...(worker
      ? {
          background: (job: UvxJob) =>
            startInstallWorker(worker, uvxJob(context, job), context.config.hostEnv),
        }
      : {}),
    install,
  });
  if (uvx) {
    context.extraBinds.push(...uvx.binds);
    return uvx.command;
  }
  const hostEnv = context.config.hostEnv;
  const lockFile = defaultPinLockFile(hostEnv, context.config.hostHome);
  // A worker started ahead of its job (while the pin runs); ended unused unless handed one.
  let ahead: EarlyWorker | undefined;
  const result = await prepareNpx(command, options, {
    cache: npm,
    runAs: context.config.info.runAs,
    onEvent: context.config.spec.onEvent,
    logger: context.config.logger,
    ...(context.config.deferTidying ? { later: context.config.deferTidying } : {}),
    // The worker gets the spec already pinned by the start that asked for it, and its integrity.
    ...(inline
      ? {
          pin: async (spec: string) => ({
            spec,
            ...(context.config.pinnedIntegrity ? { integrity: context.config.pinnedIntegrity } : {}),
          }),
        }
      : {
          pin: (spec: string, registry: string, trust: RegistryTrust) =>
            pinNpxPackage(spec, { registry, trust, lockFile, logger: context.config.logger }),
        }),
    ...(worker
      ? {
          background: (pinned: PinnedSpec, registry: string, npmConfig: HostNpmConfig) => {
            const early = ahead ?? spawnInstallWorker(worker, hostEnv);
            ahead = undefined;
            return early.start(npxJob(context, pinned, registry, npmConfig));
          },
          backgroundAhead: () => {
            ahead ??= spawnInstallWorker(worker, hostEnv);
          },
          lockedSpec: (spec: string, registry: string) => lockedSpec(lockFile, spec, registry),
        }
      : {}),
    install: (argv, binds, network, env, onEvent) =>
      context.spawn(argv, { network, env }, { binds, install: true, onEvent }),
  }).finally(() => ahead?.cancel());
  if (result.bind) context.extraBinds.push(result.bind);
  if (result.bind && result.package) await writableLayer(context, result.bind, result.package, options);
  return result.command;
}

/** An npx first install for the worker: the pinned spec, and the install's own grants and env. */
function npxJob(
  context: InstallContext,
  pinned: PinnedSpec,
  registry: string,
  npmConfig: HostNpmConfig,
): InstallJob {
  const npm = context.config.npm;
  return {
    spec: pinned.spec,
    ...(pinned.integrity ? { integrity: pinned.integrity } : {}),
    writable: npm.userCache?.writable ?? [],
    registry,
    cacheRoot: npm.cacheRoot,
    installHosts: npm.installHosts ?? [],
    installEnv: npm.installEnv ?? {},
    userCache: npm.userCache !== undefined,
    stateDir: context.config.stateDir,
    ...(npm.userCache?.stateRoot ? { stateRoot: npm.userCache.stateRoot } : {}),
    deadlineMs: INSTALL_DEADLINE_MS,
    npmConfig,
    ...(context.config.runAsWhenRoot ? { runAsWhenRoot: context.config.runAsWhenRoot } : {}),
  };
}

/** The exact spec the pin lock holds for `spec` from `registry` (a guess: see NpxDeps.lockedSpec). */
function lockedSpec(lockFile: string, spec: string, registry: string): string | undefined {
  try {
    const pin = readPinLock(lockFile).pins.find((p) => p.spec === spec && p.registry === registry);
    return pin ? `${pin.name}@${pin.version}` : undefined;
  } catch {
    return undefined;
  }
}

/** A uvx first install for the worker: the environment's requirement, and the install's own grants and env. */
function uvxJob(context: InstallContext, uvx: UvxJob): InstallJob {
  const npm = context.config.npm;
  return {
    spec: uvx.requirement,
    uvx,
    registry: uvx.index,
    cacheRoot: npm.cacheRoot,
    installHosts: npm.installHosts ?? [],
    installEnv: npm.installEnv ?? {},
    // The session's rw mounts, which a uv-managed Python must stay clear of.
    writable: npm.userCache?.writable ?? [],
    userCache: npm.userCache !== undefined,
    stateDir: context.config.stateDir,
    deadlineMs: INSTALL_DEADLINE_MS,
    ...(context.config.runAsWhenRoot ? { runAsWhenRoot: context.config.runAsWhenRoot } : {}),
  };
}

/**
 * A server that writes next to its own code (server-memory keeps memory.jsonl in its dist/)
 * gets a writable copy of its own package directory over the read-only cache entry: kept in
 * its named state across sessions, or in this session's directory. The copy is made inside a
 * sandbox (no network, no environment, no mounts), so the host never walks what the install
 * scripts wrote.
 */
async function writableLayer(
  context: InstallContext,
  cache: Bind,
  pkg: { readonly key: string; readonly dir: string },
  options: PrepareOptions,
): Promise<void> {
  let copy: { readonly dir: string; readonly fresh: boolean };
  if (context.state) copy = context.state.packageCopy(pkg.key);
  else {
    const dir = join(context.root, 'pkg');
    mkdirSync(dir, { mode: 0o700 });
    const runAs = context.config.info.runAs;
    if (runAs) chownSync(dir, runAs.uid, runAs.gid);
    copy = { dir, fresh: true };
  }
  const inEntry = pkg.dir.startsWith(`${cache.dest}/`) ? pkg.dir.slice(cache.dest.length) : undefined;
  if (copy.fresh && !context.state && inEntry !== undefined) {
    // A session's copy: made by the server's own start. The install is bound a second time for
    // it, as the host created its top (never a path under what install scripts wrote).
    context.extraBinds.push({ source: cache.source, dest: PACKAGE_SOURCE, mode: 'ro' });
    context.copyAtStart({ from: `${PACKAGE_SOURCE}${inEntry}`, to: pkg.dir });
  } else if (copy.fresh) {
    // A named state's copy is made once and kept: in a step of its own, so that a copy that
    // fails is a prepare error before any server writes into it.
    const target = '/run/mcp-sandbox/writable';
    const proc = await context.spawn(
      ['cp', '-R', '-P', '--preserve=mode,timestamps', `${pkg.dir}/.`, `${target}/`],
      { network: { allow: [] } },
      { binds: [cache, { source: copy.dir, dest: target, mode: 'rw' }], install: true },
    );
    void proc.closeStdin();
    let said = '';
    const drain = async (stream: AsyncIterable<Uint8Array>) => {
      for await (const chunk of stream) said = (said + Buffer.from(chunk).toString()).slice(-1000);
    };
    const [status] = await Promise.all([proc.exit, drain(proc.stdout), drain(proc.stderr)]);
    options.signal?.throwIfAborted();
    if (status.code !== 0) {
      throw new SandboxFailureError(
        `could not make the server's package writable (cp exited ${status.code ?? status.signal}): ${said.trim()}`,
        { code: 'E_PREPARE' },
      );
    }
  }
  context.config.spec.onEvent?.({
    type: 'writable-package',
    dir: pkg.dir,
    persistent: context.state !== undefined,
  });
  context.extraBinds.push({ source: copy.dir, dest: pkg.dir, mode: 'rw' });
}
