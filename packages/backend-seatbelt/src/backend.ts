import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readSync, realpathSync } from 'node:fs';
import { homedir, release, tmpdir } from 'node:os';
import {
  type BackendFactoryOptions,
  BackendUnavailableError,
  type SandboxBackend,
  SPECIFICATION_VERSION,
  silentLogger,
} from '@mcpsandbox/core';
import { type Dialer, parseGrant, type Resolver } from '@mcpsandbox/egress';
import {
  checkMountsSpareHostState,
  checkStateName,
  defaultNpmCache,
  defaultStateRoot,
  type NpxCacheOptions,
  openState,
  planTlsTrust,
} from '@mcpsandbox/host-side';
import { psTable } from './engine/processes.js';
import { SeatbeltSandbox } from './engine/sandbox.js';
import { isAlive, sweepAbandoned } from './engine/session-root.js';
import { type SeatbeltDenials, watchDenials } from './log/watch.js';
import { type DylibClosure, dylibClosure } from './profile/dylib-closure.js';
import { profilePath } from './profile/plan.js';

export interface SeatbeltBackendOptions extends BackendFactoryOptions {
  /** Host directory for each session's private home and tmp (default: the OS temp dir). */
  readonly stateDir?: string;
  /** Root of the persistent npx install cache (default `$XDG_CACHE_HOME/mcp-sandbox/npm`). */
  readonly npmCacheDir?: string;
  /** The npm registry installs may reach (default: `npm config get registry`). */
  readonly npmRegistry?: string;
  /** The OS to act for (default `process.platform`): the backend runs on darwin only. */
  readonly platform?: NodeJS.Platform;
  /**
   * The sandbox-exec to run (default /usr/bin/sandbox-exec). Only the lifecycle tests off macOS
   * give another: a stand-in that enforces nothing, to drive teardown and the sweep on Linux.
   */
  readonly sandboxExec?: string;
  /**
   * Where the session's denials are read from (default: `log stream` on macOS). Only the tests
   * off macOS give another, to feed recorded log lines.
   */
  readonly denialSource?: (reporter: SeatbeltDenials, tag: string) => { kill(): void } | undefined;
  /** Tests: trust for bound hosts' certificates under `--secret` (else this process's default trust). */
  readonly secretUpstreamCa?: string;
  /** Tests: the egress proxy's resolver and upstream dialer. */
  readonly resolve?: Resolver;
  readonly dial?: Dialer;
}

/** What the isolation line, `doctor` and `--require-isolation os` say this engine enforces. */
export const SEATBELT_FACTS = {
  engine: 'Seatbelt (sandbox-exec) with a profile generated per process',
  enforces:
    'reads only the system runtime, the server and its libraries, mounts and the session home/tmp; writes only the session and rw mounts; Mach services from a named allowlist; network only to the egress proxy',
  gaps: 'no pid namespace: a process that leaves its process group after its parent died outlives the session until the next start sweeps it; no memory or process limits',
} as const;

/** The dylib closure with the machine's otool (Command Line Tools, which Homebrew requires). */
function otoolClosure(binary: string): DylibClosure {
  // A script (`#!…`) has no load commands: its interpreter's closure is asked for separately.
  if (!isMachO(binary)) return { dirs: [], links: [] };
  try {
    return dylibClosure(binary, {
      otoolL: (path) => execFileSync('/usr/bin/otool', ['-L', path], { encoding: 'utf8', timeout: 10_000 }),
      realpath: (path) => realpathSync(path),
    });
  } catch (error) {
    if ((error as { code?: string }).code === 'E_SEATBELT_PATH') throw error;
    // No otool (no Command Line Tools): a node from nodejs.org or nvm links system libraries only.
    return { dirs: [], links: [] };
  }
}

/** Mach-O (thin or fat) by its magic number; anything else is not a binary otool can read. */
function isMachO(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(4);
    if (readSync(fd, head, 0, 4, 0) < 4) return false;
    const magic = head.readUInt32BE(0);
    return [0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe, 0xbebafeca].includes(magic);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The `seatbelt` backend: mcp-sandbox's own Seatbelt profile for each process (see README), run
 * with sandbox-exec; the host side (egress proxy, state, TLS trust) shared with `local`.
 * Construction does no I/O.
 */
export function createSeatbeltBackend(options: SeatbeltBackendOptions = {}): SandboxBackend {
  const logger = options.logger ?? silentLogger;
  const hostEnv = options.hostEnv ?? process.env;
  const settings = options.settings ?? {};
  const stateName = settings.state === undefined ? undefined : checkStateName(settings.state);
  const platform = options.platform ?? process.platform;
  const tlsTrust = !['off', 'false', '0', 'no'].includes(settings.hostTlsTrust ?? 'on');
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'seatbelt',
    isolation: 'os',
    substitutesSecrets: true,
    describe: () =>
      platform === 'darwin'
        ? `${SEATBELT_FACTS.engine}, Darwin ${release()}: ${SEATBELT_FACTS.enforces}; ${SEATBELT_FACTS.gaps}`
        : `seatbelt: macOS only (this is ${platform})`,
    async create(spec, createOptions) {
      if (platform !== 'darwin' && options.sandboxExec === undefined) {
        throw new BackendUnavailableError(`the seatbelt backend runs on macOS only (this is ${platform})`, {
          code: 'E_SEATBELT_UNAVAILABLE',
        });
      }
      for (const mount of spec.mounts ?? []) {
        profilePath(mount.hostPath, `--mount ${mount.hostPath}:`);
        if (mount.hostPath !== mount.sandboxPath) {
          throw new BackendUnavailableError(
            `--mount ${mount.hostPath}:${mount.sandboxPath}: Seatbelt shows host paths where they are; use --mount ${mount.hostPath}:${mount.hostPath}`,
            { code: 'E_SEATBELT_MOUNT_PATH' },
          );
        }
      }
      const grants = (spec.network?.allow ?? []).map(parseGrant);
      createOptions?.signal?.throwIfAborted();
      const home = hostEnv.HOME ?? homedir();
      const stateDir = options.stateDir ?? settings.stateDir ?? tmpdir();
      sweepAbandoned(stateDir, psTable, isAlive);
      const stateRoot = settings.stateRoot ?? defaultStateRoot(hostEnv, home, false);
      const installHosts = (settings.installAllowNet ?? '').split(',').filter(Boolean);
      for (const host of installHosts) parseGrant(host);
      const registry = options.npmRegistry ?? settings.npmRegistry;
      const npm: NpxCacheOptions = {
        cacheRoot: options.npmCacheDir ?? settings.npmCacheDir ?? defaultNpmCache(hostEnv, home, false),
        hostEnv,
        // `--project-npmrc`: a project .npmrc may choose npm's settings (else the user's own only).
        ...(settings.projectNpmrc === 'on' ? { projectNpmrc: true } : {}),
        ...(installHosts.length > 0 ? { installHosts } : {}),
        ...(registry ? { registry } : {}),
      };
      checkMountsSpareHostState(spec.mounts ?? [], { stateDir, cacheRoot: npm.cacheRoot, stateRoot });
      const trust = tlsTrust ? planTlsTrust(hostEnv, ['/Users', '/Volumes', '/private']) : undefined;
      for (const note of trust?.notes ?? []) logger.warn(note);
      const state = stateName ? openState(stateRoot, stateName, undefined) : undefined;
      // A start that fails after taking the --state lock gives it back.
      return SeatbeltSandbox.open({
        spec,
        grants,
        hostEnv,
        hostHome: home,
        stateDir,
        ...(state ? { state } : {}),
        autoMount: settings.autoMount !== 'false',
        npm,
        trust: {
          env: Object.fromEntries((trust?.entries ?? []).map((entry) => [entry.name, entry.value])),
          files: (trust?.entries ?? []).flatMap((entry) => entry.binds.map((bind) => bind.source)),
        },
        forwardsHostTrust: tlsTrust,
        ...(options.secretUpstreamCa ? { secretUpstreamCa: options.secretUpstreamCa } : {}),
        ...(options.resolve ? { resolve: options.resolve } : {}),
        ...(options.dial ? { dial: options.dial } : {}),
        sandboxExec: options.sandboxExec ?? '/usr/bin/sandbox-exec',
        closure: platform === 'darwin' ? otoolClosure : () => ({ dirs: [], links: [] }),
        watchLog: options.denialSource ?? (platform === 'darwin' ? watchDenials : () => undefined),
        logger,
      }).catch((error: unknown) => {
        state?.release();
        throw error;
      });
    },
  };
}
