import { existsSync, fchmodSync, fchownSync, mkdirSync, mkdtempSync, unlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PinChangedError, type PinnedSpec, type PrepareOptions, SandboxFailureError } from '@mcpsandbox/core';
import {
  at,
  closeDir,
  HostFsError,
  lstatAt,
  type OpenDir,
  openDirAt,
  openOwnedDir,
  removeAt,
  removeBelowOwned,
  renameAt,
  sealTree,
  writeFileAt,
} from './host-fs.js';
import { InstallReport } from './install-report.js';
import { installInBackground } from './npx/background.js';
import { INSTALLING, writeInstalling } from './npx/cache-status.js';
import { cacheUsage, writeUsage } from './npx/cache-usage.js';
import {
  cacheKey,
  describeInstall,
  dropOwner,
  type Installed,
  MARKER,
  OWNER,
  PREFIX,
  readEntry,
  sweepStaging,
  waitForOthers,
} from './npx/entries.js';
import { runInstallStep } from './npx/install-step.js';
import { checkInstalledIntegrity } from './npx/installed-integrity.js';
import {
  DEFAULT_NPM_REGISTRY,
  type HostNpmConfig,
  lookUpNpmConfig,
  normalizeRegistry,
} from './npx/npm-config.js';
import { hasInstallScripts, optionalPackages } from './npx/optional.js';
import { cacheFullError, installBudget, installQuota } from './npx/quota.js';
import { SEED_DIR } from './npx/seed-cache.js';
import { PACKAGE_NAME, parseNpxCommand } from './npx/spec.js';
import { type InstallStep, installSteps, nodeHeaders, sharedCache } from './npx/steps.js';
import { type NpxDeps, type PreparedNpx, SANDBOX_NPM_ROOT } from './npx/types.js';
import { InstallGuard } from './npx/watchdog.js';
import type { Bind } from './view.js';

export { cacheKey } from './npx/entries.js';
export { DEFAULT_NPM_REGISTRY, type HostNpmConfig, registryAccess } from './npx/npm-config.js';
export { type NpxCommand, parseNpxCommand } from './npx/spec.js';
export {
  type NpxCacheOptions,
  type NpxDeps,
  type PreparedNpx,
  SANDBOX_NPM_CACHE,
  SANDBOX_NPM_ROOT,
} from './npx/types.js';

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
  // First: npm's answer is kept in the cache root (npm-config-store.ts).
  mkdirSync(deps.cache.cacheRoot, { recursive: true, mode: deps.runAs ? 0o755 : 0o700 });
  const settings = lookUpNpmConfig(deps.cache);
  // A first install ahead: its worker's process starts now, and loads while npm is asked its
  // settings (when they are not kept) and the pin asks the registry.
  if (deps.background && deps.backgroundAhead) {
    const guess = deps.cache.registry ?? settings.known?.registry ?? DEFAULT_NPM_REGISTRY;
    if (!likelyCached(deps, normalizeRegistry(guess), parsed.spec)) deps.backgroundAhead();
  }
  const npmConfig = settings.known ?? (await settings.ask());
  const registry = normalizeRegistry(deps.cache.registry ?? npmConfig.registry);
  // mcp-sandbox's own words go to its logger: the prepare stream is the sandbox's output.
  const say = (text: string) => deps.logger.info(text);
  if (deps.cache.projectNpmrc) sayRegistrySource(deps, registry, npmConfig);
  // Pinned installs: the exact version recorded on first use (or a refusal), never "latest now".
  const pinned = deps.pin
    ? await deps.pin(parsed.spec, registry, {
        caFiles: [npmConfig.cafile, deps.cache.hostEnv.NODE_EXTRA_CA_CERTS],
        strictSsl: npmConfig.strictSsl,
      })
    : { spec: parsed.spec };
  const spec = pinned.spec;
  const key = cacheKey(registry, spec);
  const entry = join(deps.cache.cacheRoot, key);
  const inside = `${SANDBOX_NPM_ROOT}/${key}`;

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
      checkEntryIntegrity(installed, pinned, entry);
      deps.onEvent?.({ type: 'prepare', cache: 'hit', spec, entry });
    } else {
      sweepStaging(root);
      const registryUrl = new URL(registry);
      const port = registryUrl.port || (registryUrl.protocol === 'http:' ? '80' : '443');
      const grant = `${registryUrl.hostname}:${port}`;
      installed = await waitForOthers(root, key, options, say, readEntry);
      if (installed) {
        checkEntryIntegrity(installed, pinned, entry);
        deps.onEvent?.({ type: 'prepare', cache: 'hit', spec, entry });
      } else {
        say(`installing ${spec} from ${registry} into ${entry} (network: ${grant} only)`);
        if (deps.background) {
          say(
            'a first install can take minutes: it goes on if the client gives up or times out ' +
              '(mcp-sandbox ls and doctor show it while it runs); then start the server again',
          );
        }
        deps.onEvent?.({ type: 'prepare', cache: 'miss', spec, entry, network: [grant] });
        // Checked here too, so that a fallback is said where the user sees it (not in the worker).
        sharedCache(deps, npmConfig);
        installed = deps.background
          ? await installInBackground(root, key, pinned, registry, npmConfig, options, deps.background, say)
          : await install(root, key, pinned, registry, grant, npmConfig, options, deps);
        checkEntryIntegrity(installed, pinned, entry);
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

/**
 * Whether the cache entry of what `spec` would install exists, judged before the pin from the
 * spec the pin lock holds. Only a guess: it decides whether a worker starts early, nothing else.
 */
function likelyCached(deps: NpxDeps, registry: string, spec: string): boolean {
  const exact = deps.lockedSpec?.(spec, registry) ?? spec;
  return existsSync(join(deps.cache.cacheRoot, cacheKey(registry, exact)));
}

/** `--project-npmrc`: which registry a project's config may have chosen, and from which file. */
function sayRegistrySource(deps: NpxDeps, registry: string, npmConfig: HostNpmConfig): void {
  const source = deps.cache.registry ? 'the npmRegistry setting' : npmConfig.registrySource;
  deps.logger.warn(`--project-npmrc: npm registry ${registry} (from ${source ?? 'npm'})`);
}

/**
 * A cache entry records the integrity its install was checked against: an entry of the same
 * spec that holds another (or none, while a pin exists) is not what the pin binds.
 */
function checkEntryIntegrity(installed: Installed, pinned: PinnedSpec, entry: string): void {
  if (pinned.integrity === undefined || installed.integrity === pinned.integrity) return;
  throw new PinChangedError(
    `the installed ${pinned.spec} has integrity ${installed.integrity ?? '(none recorded)'}, but ${pinned.integrity} is pinned: ` +
      `refusing to start it; to install the pinned tarball, remove its install cache entry (rm -rf ${entry})`,
  );
}

async function install(
  root: OpenDir,
  key: string,
  pinned: PinnedSpec,
  registry: string,
  grant: string,
  npmConfig: HostNpmConfig,
  options: PrepareOptions,
  deps: NpxDeps,
): Promise<Installed> {
  const { spec } = pinned;
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
    writeInstalling(staging, spec);
    mkdirSync(at(staging.fd, PREFIX), { mode: 0o700 });
    prefix = openDirAt(staging, PREFIX);
    if (!prefix) throw new HostFsError('the install prefix vanished');
    if (deps.runAs) fchownSync(prefix.fd, deps.runAs.uid, deps.runAs.gid);
    // What this install may write: its entry's quota, or what is left of the cache's total.
    const quota = deps.cache.quota ?? installQuota(deps.cache.hostEnv);
    const budget = installBudget(quota, cacheUsage(root, quota, stagingName), cacheRoot);
    const full = cacheFullError(spec, budget);
    if (full) throw full;
    const guard = new InstallGuard(prefix, budget, spec);
    const steps = installSteps(
      inside,
      spec,
      registry,
      npmConfig,
      sharedCache(deps, npmConfig),
      deps.cache.hostEnv,
      npmGatePath(),
    );
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
    // Native builds as the host's npm does them: against the headers installed with its node.
    // A nodedir the user passes with --install-env wins.
    const headers = nodeHeaders(deps.cache.hostEnv);
    const env: Record<string, string> = {
      ...(headers ? { npm_config_nodedir: headers.nodedir } : {}),
      ...deps.cache.installEnv,
      ...(extraCa ? { NODE_EXTRA_CA_CERTS: extraCa } : {}),
    };
    const report = new InstallReport();
    let integrity: string | undefined;
    let optional: ReadonlySet<string> = new Set();
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i] as InstallStep;
      if (step.scripts) {
        // What npm fetched is compared with the pin before the first step that runs its code.
        if (pinned.integrity !== undefined)
          integrity = checkInstalledIntegrity(prefix, spec, pinned.integrity);
        // The lock as npm wrote it, before any package code ran.
        optional = optionalPackages(prefix);
        // Nothing to build: the fetch linked the bins already (a step start saved).
        if (!hasInstallScripts(prefix)) continue;
        // The install's own npm cache (as root) is gone before any package code runs.
        removeAt(staging, SEED_DIR);
      }
      const context = { staging, stagingName, prefix, prefixBind, trust, headers, env, report, guard };
      const install = { spec, inside, registry, grant, npmConfig, budget, optional };
      // A step that starts early runs beside this one and goes on once this one has succeeded.
      const next = steps[i + 1]?.early ? steps[++i] : undefined;
      const run = () => runInstallStep(step, context, install, options, deps);
      await (next ? runInstallStep(next, context, install, options, deps, run) : run());
    }
    // What npm wrote in the install's own cache is never published: removed now, or once the
    // start has its answer (the entry's own `pkg` alone is ever shown to a sandbox).
    if (!deps.later) removeAt(staging, SEED_DIR);
    const installed = publish(
      root,
      key,
      stagingName,
      { staging, prefix, guard },
      { spec, registry, integrity },
      deps.runAs,
    );
    deps.later?.(() => removeBelowOwned(cacheRoot, [key, SEED_DIR]));
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

/**
 * npm-gate.js beside this module (the built package, or the app's bundle); absent when running
 * from source, where `npm ci` starts after the resolve as a plain step.
 */
function npmGatePath(): string | undefined {
  const path = fileURLToPath(new URL('./npm-gate.js', import.meta.url));
  return existsSync(path) ? path : undefined;
}

/** Seals the finished install, writes its marker and moves the staging directory into place. */
function publish(
  root: OpenDir,
  key: string,
  stagingName: string,
  dirs: { readonly staging: OpenDir; readonly prefix: OpenDir; readonly guard: InstallGuard },
  what: { readonly spec: string; readonly registry: string; readonly integrity: string | undefined },
  runAs: NpxDeps['runAs'],
): Installed {
  const { staging, prefix } = dirs;
  // Take the tree over before reading it: as root it becomes ours, so no process of the
  // sandbox's uid can change it any more; in every case setuid bits and g/o write go. The seal
  // counts as it goes (the exact count, nothing writes any more) and refuses past the quota.
  const counter = dirs.guard.counter();
  sealTree(prefix, {
    fromUid: runAs?.uid ?? process.getuid?.() ?? 0,
    ...(runAs ? { to: { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 } } : {}),
    counter,
  });
  fchmodSync(prefix.fd, 0o755);
  const installed = describeInstall(prefix, what.spec, what.registry, what.integrity);
  writeUsage(staging, counter);
  // The marker goes next to pkg/, in the staging directory the sandbox never saw.
  writeFileAt(staging, MARKER, `${JSON.stringify(installed)}\n`);
  unlinkSync(at(staging.fd, INSTALLING));
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
  dropOwner(staging);
  return installed;
}
