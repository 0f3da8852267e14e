import { homedir, tmpdir } from 'node:os';
import {
  type BackendFactoryOptions,
  type SandboxBackend,
  SPECIFICATION_VERSION,
  silentLogger,
} from '@mcpsandbox/core';
import { parseGrant } from '@mcpsandbox/egress';
import {
  checkMountsSpareHostState,
  checkStateName,
  defaultNpmCache,
  defaultStateRoot,
  type NpxCacheOptions,
  openState,
  planTlsTrust,
  unwritableMountWarnings,
  uvCacheRoot,
} from '@mcpsandbox/host-side';
import { enforcedBy, SRT_VERSION, srtEngine } from './engine.js';
import { checkPathMounts, srtPlatformOf, userDataRoots, WINDOWS_REFUSAL } from './policy.js';
import { SrtSandbox } from './sandbox.js';

export interface SrtBackendOptions extends BackendFactoryOptions {
  /** Host directory for each session's private home and tmp (default: the OS temp dir). */
  readonly stateDir?: string;
  /** Root of the persistent npx install cache (default `$XDG_CACHE_HOME/mcp-sandbox/npm`). */
  readonly npmCacheDir?: string;
  /** The npm registry installs may reach (default: `npm config get registry`). */
  readonly npmRegistry?: string;
  /** The OS to act for (default `process.platform`); tests of the refusals use it. */
  readonly platform?: NodeJS.Platform;
  /** Tests: trust for bound hosts' certificates under `--secret` (else this process's default trust). */
  readonly secretUpstreamCa?: string;
}

/**
 * The `srt` backend: each process runs under Anthropic's sandbox-runtime (Seatbelt on macOS,
 * bubblewrap on Linux) with this product's defaults: no host files but what the session needs,
 * a private home and tmp, the environment exactly the allowlist, egress only through the host
 * proxy with the session's grants. Construction does no I/O; the first `create` starts srt.
 */
export function createSrtBackend(options: SrtBackendOptions = {}): SandboxBackend {
  const logger = options.logger ?? silentLogger;
  const hostEnv = options.hostEnv ?? process.env;
  const settings = options.settings ?? {};
  const stateName = settings.state === undefined ? undefined : checkStateName(settings.state);
  const autoMount = settings.autoMount !== 'false';
  const installHosts = (settings.installAllowNet ?? '').split(',').filter(Boolean);
  for (const host of installHosts) parseGrant(host);
  const tlsTrust = !['off', 'false', '0', 'no'].includes(settings.hostTlsTrust ?? 'on');
  const platform = srtPlatformOf(options.platform ?? process.platform);
  const facts = platform ? enforcedBy(platform) : undefined;
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'srt',
    isolation: 'os',
    substitutesSecrets: true,
    describe: () =>
      facts
        ? `sandbox-runtime ${SRT_VERSION}, ${facts.engine}: ${facts.enforces}${facts.gaps.startsWith('none') ? '' : `; ${facts.gaps}`}`
        : (options.platform ?? process.platform) === 'win32'
          ? `sandbox-runtime ${SRT_VERSION}: ${WINDOWS_REFUSAL}`
          : `sandbox-runtime ${SRT_VERSION}: not available on ${process.platform}`,
    async create(spec, createOptions) {
      checkPathMounts(spec.mounts ?? []);
      const grants = (spec.network?.allow ?? []).map(parseGrant);
      const engine = await srtEngine(options.platform ?? process.platform);
      createOptions?.signal?.throwIfAborted();
      const home = hostEnv.HOME ?? homedir();
      // As root the sandbox runs as another user: the install cache and states are local's too.
      const runsAsOther = engine.runAs !== undefined;
      const npm: NpxCacheOptions = {
        cacheRoot: options.npmCacheDir ?? settings.npmCacheDir ?? defaultNpmCache(hostEnv, home, runsAsOther),
        hostEnv,
        // `--project-npmrc`: a project .npmrc may choose npm's settings (else the user's own only).
        ...(settings.projectNpmrc === 'on' ? { projectNpmrc: true } : {}),
        ...(installHosts.length > 0 ? { installHosts } : {}),
        ...((options.npmRegistry ?? settings.npmRegistry)
          ? { registry: options.npmRegistry ?? settings.npmRegistry }
          : {}),
      };
      const stateDir = options.stateDir ?? settings.stateDir ?? tmpdir();
      const stateRoot = settings.stateRoot ?? defaultStateRoot(hostEnv, home, runsAsOther);
      checkMountsSpareHostState(spec.mounts ?? [], { stateDir, cacheRoot: npm.cacheRoot, stateRoot });
      checkMountsSpareHostState(spec.mounts ?? [], {
        stateDir,
        cacheRoot: uvCacheRoot(npm.cacheRoot),
        stateRoot,
      });
      if (stateName) spec.onEvent?.({ type: 'state', name: stateName, root: stateRoot });
      for (const warning of unwritableMountWarnings(spec.mounts ?? [], engine.runAs)) logger.warn(warning);
      const trust = tlsTrust ? planTlsTrust(hostEnv, userDataRoots(engine.platform, home)) : undefined;
      for (const note of trust?.notes ?? []) logger.warn(note);
      const trustEnv: Record<string, string> = {};
      const trustFiles: string[] = [];
      for (const entry of trust?.entries ?? []) {
        trustEnv[entry.name] = entry.value;
        trustFiles.push(...entry.binds.map((bind) => bind.source));
      }
      const sandbox = new SrtSandbox({
        spec,
        engine,
        grants,
        hostEnv,
        hostHome: home,
        stateDir,
        ...(stateName ? { state: openState(stateRoot, stateName, engine.runAs) } : {}),
        autoMount,
        npm,
        trust: { env: trustEnv, files: trustFiles },
        forwardsHostTrust: tlsTrust,
        ...(options.secretUpstreamCa ? { secretUpstreamCa: options.secretUpstreamCa } : {}),
        logger,
      });
      try {
        await sandbox.startSecrets();
      } catch (error) {
        await sandbox.close();
        throw error;
      }
      return sandbox;
    },
  };
}
