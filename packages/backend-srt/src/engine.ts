import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { SandboxManager, type SandboxRuntimeConfig } from '@anthropic-ai/sandbox-runtime';
import { BackendUnavailableError } from '@mcpsandbox/core';
import { EgressSwitch } from './egress-switch.js';
import { adoptBridgeSockets, type LinuxShims, linuxShims, type RunAs, runAsFor } from './linux-engine.js';
import { type SrtPlatform, srtPlatformOf, WINDOWS_REFUSAL } from './policy.js';
import { srtManagerConfig } from './profile.js';

/** The exact sandbox-runtime release this backend was written and tested against. */
export const SRT_VERSION = '0.0.83';

export interface SrtEngine {
  readonly platform: SrtPlatform;
  readonly version: string;
  /** Where srt's own package lives: read-only inside, and never under a writable path. */
  readonly packageDir: string;
  /** Every directory holding code the host runs for a session (srt, the bwrap shim): never writable inside. */
  readonly hostCodeDirs: readonly string[];
  readonly egress: EgressSwitch;
  /** The loopback port inside the sandbox where the proxy is reached (srt's bridge on Linux). */
  readonly insideProxyPort: number;
  /** srt's Linux bridge sockets (in the OS temp dir, which is denied): shown so egress works. */
  readonly bridgeSockets: readonly string[];
  /** Who the sandboxed processes run as: an unprivileged user when this process is root (Linux). */
  readonly runAs: RunAs | undefined;
  /** setpriv (Linux): each launch gets a parent-death signal, so a killed bridge takes it along. */
  readonly setpriv: string | undefined;
  /** Host code the sandbox itself runs (srt's socat, through its shim): shown read-only. */
  readonly insideTools: readonly string[];
}

/** What each OS's engine enforces, for `doctor`, the start-up line and the README. */
export function enforcedBy(platform: SrtPlatform): {
  readonly engine: string;
  readonly enforces: string;
  readonly gaps: string;
} {
  if (platform === 'macos') {
    return {
      engine: 'Seatbelt (sandbox-exec)',
      enforces:
        'file reads denied under the user data roots except what is granted, writes only to the private home and tmp and rw mounts, network only to the host egress proxy',
      gaps: 'no pid namespace: teardown kills the process group and every descendant it can find; a process that leaves both can outlive the session',
    };
  }
  return {
    engine: 'bubblewrap via srt',
    enforces:
      'user, pid and network namespaces, seccomp (no unix sockets, no set-id bits or file capabilities), as nobody when run as root, file reads denied under the user data roots except what is granted, writes only to the private home and tmp and rw mounts, network only to the host egress proxy, nothing left after a killed bridge',
    gaps: 'none beyond those of bubblewrap',
  };
}

/** The parts of srt and of this host the start uses: srt's own by default, injected by tests. */
export interface SrtEngineDeps {
  readonly platform: NodeJS.Platform;
  readonly manager: Pick<
    typeof SandboxManager,
    'checkDependencies' | 'initialize' | 'getLinuxHttpSocketPath' | 'getLinuxSocksSocketPath'
  >;
  /** The host listener srt's proxy settings point at, on a port in `range` when given. */
  readonly openEgress: (range?: readonly [number, number]) => Promise<EgressSwitch>;
  /** Linux: the bwrap and socat srt runs, shims that keep the promises (see `linux-engine.ts`). */
  readonly bwrapShim: () => LinuxShims | undefined;
  /** The host process's uid (default `process.getuid()`): root is dropped on Linux, refused on macOS. */
  readonly uid?: number | undefined;
}

export function defaultEngineDeps(platform: NodeJS.Platform = process.platform): SrtEngineDeps {
  return {
    platform,
    manager: SandboxManager,
    openEgress: (range) => EgressSwitch.open(range),
    bwrapShim: () => linuxShims(process.env.PATH),
  };
}

let engine: Promise<SrtEngine> | undefined;

/**
 * srt's manager is one per process and a second initialize with another config throws: so it is
 * initialized once, with a config no session changes (everything per session goes in each
 * command's own config), and its network pointed at our host-side proxy.
 */
export function srtEngine(platform: NodeJS.Platform = process.platform): Promise<SrtEngine> {
  engine ??= startSrtEngine(defaultEngineDeps(platform));
  engine.catch(() => {
    engine = undefined;
  });
  return engine;
}

/** Starts srt once for this process: the checks srt documents for the OS, then its manager. */
export async function startSrtEngine(deps: SrtEngineDeps): Promise<SrtEngine> {
  const platform = srtPlatformOf(deps.platform);
  if (!platform) {
    const message =
      deps.platform === 'win32' ? WINDOWS_REFUSAL : `the srt backend does not run on ${deps.platform}`;
    throw new BackendUnavailableError(message, { code: 'E_SRT_PLATFORM' });
  }
  const uid = 'uid' in deps ? deps.uid : process.getuid?.();
  if (platform === 'macos' && uid === 0) {
    // Seatbelt has no user to drop to here: the server would run as root, with root's files.
    throw new BackendUnavailableError(
      'the srt backend does not run as root on macOS: the server would run as root. Run mcp-sandbox as your own user, or use --backend e2b',
      { code: 'E_SRT_ROOT' },
    );
  }
  const check = deps.manager.checkDependencies();
  if (check.errors.length > 0) {
    throw new BackendUnavailableError(
      `the srt backend cannot start: ${check.errors.join('; ')}. ${installHint(platform)}`,
      { code: 'E_SRT_DEPENDENCIES' },
    );
  }
  const shim = platform === 'linux' ? deps.bwrapShim() : undefined;
  if (platform === 'linux' && !shim) {
    throw new BackendUnavailableError(
      `the srt backend cannot start: bubblewrap was not found. ${installHint(platform)}`,
      {
        code: 'E_SRT_DEPENDENCIES',
      },
    );
  }
  const egress = await deps.openEgress();
  const config: SandboxRuntimeConfig = {
    ...srtManagerConfig(egress.port),
    ...(shim ? { bwrapPath: shim.path } : {}),
    ...(shim?.socat ? { socatPath: shim.socat } : {}),
  };
  try {
    await deps.manager.initialize(config);
  } catch (error) {
    egress.close();
    throw new BackendUnavailableError(
      `the srt backend cannot start: ${(error as Error).message}. ${installHint(platform)}`,
      { code: 'E_SRT_DEPENDENCIES', cause: error },
    );
  }
  const bridgeSockets = [
    deps.manager.getLinuxHttpSocketPath(),
    deps.manager.getLinuxSocksSocketPath(),
  ].filter((path): path is string => typeof path === 'string');
  const runAs = shim ? runAsFor(process.getuid?.()) : undefined;
  if (shim) adoptBridgeSockets(shim.dir, [...new Set(bridgeSockets)], runAs);
  return {
    platform,
    version: SRT_VERSION,
    packageDir: srtPackageDir(),
    hostCodeDirs: [srtPackageDir(), ...(shim ? [shim.dir] : [])],
    egress,
    insideProxyPort: platform === 'linux' ? 3128 : egress.port,
    bridgeSockets,
    runAs,
    setpriv: shim?.setpriv,
    insideTools: shim?.socat ? [shim.socat] : [],
  };
}

export function installHint(platform: SrtPlatform): string {
  if (platform === 'linux')
    return 'Install bubblewrap, socat and ripgrep (apt-get install bubblewrap socat ripgrep)';
  return 'Install ripgrep (brew install ripgrep); sandbox-exec ships with macOS';
}

/** The directory of the installed sandbox-runtime package. */
export function srtPackageDir(): string {
  const require = createRequire(import.meta.url);
  // …/sandbox-runtime/dist/index.js, in the OS's own spelling (backslashes on Windows).
  return dirname(dirname(require.resolve('@anthropic-ai/sandbox-runtime')));
}

/** What `doctor` shows for this backend: its engine here, or why it cannot start, naming the engine. */
export async function probeSrt(
  platform: NodeJS.Platform = process.platform,
  start: (platform: NodeJS.Platform) => Promise<SrtEngine> = srtEngine,
): Promise<{ readonly engine: string; readonly version: string }> {
  const srtPlatform = srtPlatformOf(platform);
  const engine = srtPlatform ? enforcedBy(srtPlatform).engine : `no srt engine for ${platform}`;
  try {
    await start(platform);
  } catch (error) {
    if (!(error instanceof BackendUnavailableError)) throw error;
    throw new BackendUnavailableError(`${engine}, sandbox-runtime ${SRT_VERSION}: ${error.message}`, {
      code: error.code,
      cause: error,
    });
  }
  return { engine, version: SRT_VERSION };
}
