import { createRequire } from 'node:module';
import { SandboxManager } from '@anthropic-ai/sandbox-runtime';
import { BackendUnavailableError } from '@mcpsandbox/core';
import { EgressSwitch } from './egress-switch.js';
import { type SrtPlatform, srtPlatformOf } from './policy.js';
import { srtManagerConfig } from './profile.js';

/** The exact sandbox-runtime release this backend was written and tested against. */
export const SRT_VERSION = '0.0.83';

export interface SrtEngine {
  readonly platform: SrtPlatform;
  readonly version: string;
  /** Where srt's own package lives: read-only inside, and never under a writable path. */
  readonly packageDir: string;
  readonly egress: EgressSwitch;
  /** The loopback port inside the sandbox where the proxy is reached (srt's bridge on Linux). */
  readonly insideProxyPort: number;
  /** srt's Linux bridge sockets (in the OS temp dir, which is denied): shown so egress works. */
  readonly bridgeSockets: readonly string[];
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
  if (platform === 'linux') {
    return {
      engine: 'bubblewrap via srt',
      enforces:
        'user, pid and network namespaces, seccomp (no unix sockets), file reads denied under the user data roots except what is granted, writes only to the private home and tmp and rw mounts, network only to the host egress proxy',
      gaps: 'none beyond those of bubblewrap',
    };
  }
  return {
    engine: 'srt-win (a sandbox user, write-restricted token, WFP egress filter)',
    enforces: 'as srt documents for Windows',
    gaps: 'not verified by this project',
  };
}

let engine: Promise<SrtEngine> | undefined;

/**
 * srt's manager is one per process and a second initialize with another config throws: so it is
 * initialized once, with a config no session changes (everything per session goes in each
 * command's own config), and its network pointed at our host-side proxy.
 */
export function srtEngine(platform: NodeJS.Platform = process.platform): Promise<SrtEngine> {
  engine ??= start(platform);
  engine.catch(() => {
    engine = undefined;
  });
  return engine;
}

async function start(nodePlatform: NodeJS.Platform): Promise<SrtEngine> {
  const platform = srtPlatformOf(nodePlatform);
  if (!platform) {
    throw new BackendUnavailableError(`the srt backend does not run on ${nodePlatform}`, {
      code: 'E_SRT_PLATFORM',
    });
  }
  const egress = await EgressSwitch.open();
  const config = srtManagerConfig(egress.port);
  const check = SandboxManager.checkDependencies();
  if (check.errors.length > 0) {
    throw new BackendUnavailableError(
      `the srt backend cannot start: ${check.errors.join('; ')}. ${installHint(platform)}`,
      { code: 'E_SRT_DEPENDENCIES' },
    );
  }
  try {
    await SandboxManager.initialize(config);
  } catch (error) {
    throw new BackendUnavailableError(
      `the srt backend cannot start: ${(error as Error).message}. ${installHint(platform)}`,
      { code: 'E_SRT_DEPENDENCIES', cause: error },
    );
  }
  return {
    platform,
    version: SRT_VERSION,
    packageDir: srtPackageDir(),
    egress,
    insideProxyPort: platform === 'linux' ? 3128 : egress.port,
    bridgeSockets: [SandboxManager.getLinuxHttpSocketPath(), SandboxManager.getLinuxSocksSocketPath()].filter(
      (path): path is string => typeof path === 'string',
    ),
  };
}

export function installHint(platform: SrtPlatform): string {
  if (platform === 'linux')
    return 'Install bubblewrap, socat and ripgrep (apt-get install bubblewrap socat ripgrep)';
  if (platform === 'macos') return 'Install ripgrep (brew install ripgrep); sandbox-exec ships with macOS';
  return "Install srt's Windows sandbox (npx @anthropic-ai/sandbox-runtime windows-install) from an elevated prompt";
}

/** The directory of the installed sandbox-runtime package. */
export function srtPackageDir(): string {
  const require = createRequire(import.meta.url);
  const main = require.resolve('@anthropic-ai/sandbox-runtime');
  // …/sandbox-runtime/dist/index.js
  return main.replace(/\/dist\/index\.js$/, '');
}
