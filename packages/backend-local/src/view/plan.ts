/**
 * What one command of a sandbox sees of the host: the command itself and node, the server's own
 * files, the setup prefix, the spec's mounts and the host's TLS trust, as binds and PATH entries.
 */
import { type ExecOptions, SandboxFailureError } from '@mcpsandbox/core';
import type { NetGrant } from '@mcpsandbox/egress';
import {
  type Bind,
  commandBinds,
  isHidden,
  isInside,
  locateCommand,
  ownFiles,
  realOrSelf,
} from '@mcpsandbox/host-side';
import { SETUP_PREFIX, type SetupDirs } from '../install/setup-dirs.js';
import type { SandboxConfig, SpawnExtras } from '../session/config.js';
import { reachableBy, readableItself } from '../session/process-helpers.js';
import { parseGrants } from '../settings.js';

/** What one command sees: built by planView, turned into bwrap arguments and its environment. */
export interface ViewPlan {
  readonly command: readonly string[];
  readonly grants: readonly NetGrant[];
  readonly networked: boolean;
  /** Egress or denial hints: the outer network layer and the relay. */
  readonly layered: boolean;
  readonly install: boolean;
  /** Install and setup steps get none of the spec's environment or mounts. */
  readonly isolated: boolean;
  readonly setupBind: readonly Bind[];
  readonly mounted: readonly Bind[];
  readonly binds: readonly Bind[];
  readonly pathDirs: readonly string[];
  readonly userBinds: readonly Bind[];
  readonly trustEnv: Readonly<Record<string, string>>;
  readonly lookInside: boolean;
}

/** What planning a view needs of its sandbox. */
export interface ViewContext {
  readonly config: SandboxConfig;
  /** The host directories the sandbox never sees (see `hiddenRoots`). */
  readonly roots: readonly string[];
  /** Setup steps' prefix and home, once the first setup step made them. */
  readonly setup: SetupDirs | undefined;
  /** Binds added by prepare() (the installed package), for every later exec. */
  readonly extraBinds: readonly Bind[];
  /** `--secret`: the session CA's trust files and the variables that name them (never for install or setup). */
  readonly secretTrust?: { readonly bind: Bind; readonly env: Readonly<Record<string, string>> };
  /** Host copies of `copy` mounts, by their index in the spec. */
  readonly copies: ReadonlyMap<number, string>;
  /** Own-file paths already announced, so that each is said once. */
  readonly shown: Set<string>;
  /** Host trees a sandbox can write (rw mounts, the state root, the session's directory). */
  readonly writableTrees: readonly string[];
}

/** What the command needs to start, and what of the host it sees. */
export function planView(
  context: ViewContext,
  requested: readonly string[],
  options: ExecOptions,
  extras: SpawnExtras,
): ViewPlan {
  const { info, spec } = context.config;
  const own =
    context.config.autoMount && extras.install !== true
      ? ownFiles(requested, process.cwd(), context.roots, context.config.hostHome, context.writableTrees)
      : undefined;
  for (const file of own?.skipped ?? []) {
    context.config.logger.info(
      `not showing the server's own files for ${file}: its path passes through a read-write mount or a state directory, which a sandbox could have changed; mount its folder with --mount instead`,
    );
  }
  const command = own?.command ?? requested;
  const [name] = command;
  if (name === undefined) throw new SandboxFailureError('empty command', { code: 'E_EXEC' });
  const grants = options.network ? parseGrants(options.network.allow) : context.config.grants;
  const networked = grants.length > 0;
  // Without grants the sandbox still gets the DNS responder (unless turned off), for the hints.
  const layered = networked || context.config.denialHints;

  // What to bind so that the command and node (the relay, `#!/usr/bin/env node`) can start.
  const binds: Bind[] = [];
  const pathDirs: string[] = [];
  const install = extras.install === true;
  // Install and setup steps get none of the spec's environment or mounts.
  const isolated = install || extras.setup === true;
  // The setup prefix: written by setup steps, then seen by the server (never an install step).
  const setupBind: Bind[] =
    context.setup && !install ? [{ source: context.setup.prefix, dest: SETUP_PREFIX, mode: 'rw' }] : [];
  const mounted = [...(isolated ? [] : context.extraBinds), ...setupBind, ...(extras.binds ?? [])];
  const { lookInside } = commandView(context, name, mounted, isolated, { binds, pathDirs });
  for (const bind of own?.binds ?? []) {
    binds.push(bind);
    if (context.shown.has(bind.source)) continue;
    context.shown.add(bind.source);
    context.config.logger.info(
      `showing ${bind.source} read-only at the same path: the server's own files (--no-auto-mount turns this off)`,
    );
    spec.onEvent?.({ type: 'auto-mount', path: bind.source });
  }
  // Our own node, for the relay and `#!/usr/bin/env node` scripts. Optional when the sandbox
  // user cannot reach it (root's ~/.nvm) and no relay is needed: the system node may do.
  const ownNode = commandBinds(process.execPath, context.roots);
  const runAs = info.runAs;
  const bindable = (bind: Bind) =>
    runAs === undefined ||
    reachableBy(bind.source, runAs) ||
    (info.staging !== undefined && readableItself(bind.source, runAs));
  if (networked || ownNode.binds.every(bindable)) {
    binds.push(...ownNode.binds);
    if (ownNode.pathDir) pathDirs.push(ownNode.pathDir);
  }
  const { userBinds, trustEnv } = userBindsOf(context, isolated, bindable);
  return {
    command,
    grants,
    networked,
    layered,
    install,
    isolated,
    setupBind,
    mounted,
    binds,
    pathDirs,
    userBinds,
    trustEnv,
    lookInside,
  };
}

/**
 * Where the command is, and what of the host to bind so that it can start (into `into`). A bare
 * name not on the host is looked up inside (`lookInside`).
 */
function commandView(
  context: ViewContext,
  name: string,
  mounted: readonly Bind[],
  isolated: boolean,
  into: { readonly binds: Bind[]; readonly pathDirs: string[] },
): { readonly lookInside: boolean } {
  const { hostEnv, spec } = context.config;
  const { binds, pathDirs } = into;
  const insideOnly = mounted.some((bind) => name.startsWith(`${bind.dest}/`));
  const onHost = insideOnly ? name : locateCommand(name, hostEnv.PATH, process.cwd());
  // Not on the host: a bare name may still be on the sandbox's own PATH (installed by --setup
  // into the home): the sandbox's shell looks it up, and says so when it is not there either.
  const lookInside = onHost === undefined && !name.includes('/');
  if (onHost === undefined && !lookInside) {
    throw new SandboxFailureError(`command not found: ${name}`, { code: 'E_COMMAND_NOT_FOUND' });
  }
  const found = onHost ?? name;
  // A command inside a writable mount was chosen by the sandbox (an earlier session could have
  // rewritten it): its symlinks and `#!` line must not decide which hidden host paths get bound.
  const inWritableMount = (isolated ? [] : (spec.mounts ?? [])).some(
    (mount) =>
      mount.mode === 'rw' &&
      (isInside(found, mount.hostPath) || isInside(realOrSelf(found), realOrSelf(mount.hostPath))),
  );
  if (!insideOnly && !inWritableMount && !lookInside) {
    const planned = commandBinds(found, context.roots);
    binds.push(...planned.binds);
    if (planned.pathDir) pathDirs.push(planned.pathDir);
  }
  return { lookInside };
}

/** The spec's mounts (copies for `copy` mounts) and the host's TLS trust the sandbox may see. */
function userBindsOf(
  context: ViewContext,
  isolated: boolean,
  bindable: (bind: Bind) => boolean,
): { userBinds: Bind[]; trustEnv: Record<string, string> } {
  const { spec } = context.config;
  const userBinds: Bind[] = (isolated ? [] : (spec.mounts ?? [])).map((m, index): Bind => {
    if (m.mode !== 'copy') return { source: m.hostPath, dest: m.sandboxPath, mode: m.mode };
    // Never the original: a copy mount the host did not stage is an error, not a live bind.
    const copy = context.copies.get(index);
    if (copy === undefined) throw new SandboxFailureError('copy mount not staged', { code: 'E_COPY' });
    return { source: copy, dest: m.sandboxPath, mode: 'rw' };
  });
  // The host's TLS trust: a variable crosses only when the sandbox can see what it names.
  const trustEnv: Record<string, string> = {};
  for (const entry of context.config.tlsTrust?.entries ?? []) {
    const needed = entry.binds.filter((bind) => isHidden(bind.source, context.roots));
    if (!needed.every(bindable)) continue;
    userBinds.push(...needed);
    trustEnv[entry.name] = entry.value;
  }
  // The session CA, merged with the host's trust above: these variables replace theirs.
  if (!isolated && context.secretTrust) {
    userBinds.push(context.secretTrust.bind);
    Object.assign(trustEnv, context.secretTrust.env);
  }

  return { userBinds, trustEnv };
}
