import { homedir } from 'node:os';
import {
  AbortedError,
  type BackendFactoryOptions,
  type CreateOptions,
  createRedactor,
  defaultPinLockFile,
  type Logger,
  pinNpxSpec,
  type Sandbox,
  type SandboxBackend,
  type SandboxSpec,
  SPECIFICATION_VERSION,
  silentLogger,
  UsageError,
} from '@mcpsandbox/core';
import { Sandbox as SdkSandbox } from 'e2b';
import { resolveEndpoints } from './endpoints.js';
import { DEFAULT_MAX_FRAME_BYTES, EnvdClient, envdEndpoint } from './envd.js';
import { wrapE2BError } from './errors.js';
import { DEFAULT_MOUNT_LIMITS, planCopy } from './mounts.js';
import { toE2BEgress } from './network.js';
import { E2BSandbox } from './sandbox.js';

export const DEFAULT_TEMPLATE = 'base';
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
const DEFAULT_INSTALL_TIMEOUT_MS = 10 * 60_000;
const NPM_REGISTRY_HOST = 'registry.npmjs.org';
const DEFAULT_NPM_REGISTRY = `https://${NPM_REGISTRY_HOST}/`;

export interface E2BBackendOptions extends BackendFactoryOptions {
  /** Defaults to `E2B_API_KEY` from `hostEnv`. Read on the host only; never forwarded into the VM. */
  readonly apiKey?: string;
  /** Template (name or id) the VM boots from. Default `base`; settings key `template`. */
  readonly template?: string;
  /**
   * E2B domain, e.g. for self-hosted E2B. Defaults to `E2B_DOMAIN`, then `e2b.app`. Endpoints
   * are never taken from `settings` (a project's config could send the key elsewhere).
   */
  readonly domain?: string;
  /** Control-plane API URL (HTTPS; HTTP only on loopback). Defaults to `E2B_API_URL`, then `https://api.<domain>`. */
  readonly apiUrl?: string;
  /** URL of envd in every sandbox (HTTPS; HTTP only on loopback). Defaults to `E2B_SANDBOX_URL`. */
  readonly sandboxUrl?: string;
  /** Timeout of each API request in milliseconds (default 60 s). Settings key `requestTimeoutMs`. */
  readonly requestTimeoutMs?: number;
  /** Cap on bytes copied in through mounts (default 50 MB). Settings key `maxMountBytes`. */
  readonly maxMountBytes?: number;
  /** Cap on files and directories copied in through mounts (default 2 000). Settings key `maxMountFiles`. */
  readonly maxMountFiles?: number;
  /** Cap on one frame of a process stream from envd (default 4 MiB). Settings key `maxFrameBytes`. */
  readonly maxFrameBytes?: number;
  /**
   * Hosts an `npx -y` install in `prepare` may reach while it runs, when the spec grants less
   * (default `registry.npmjs.org`; settings key `installHosts`, comma separated, empty for none).
   */
  readonly installHosts?: readonly string[];
  /** Time an `npx -y` install may take in milliseconds (default 10 min). */
  readonly installTimeoutMs?: number;
}

interface ResolvedOptions {
  readonly apiKey: string | undefined;
  readonly template: string;
  readonly endpoints: ReturnType<typeof resolveEndpoints>;
  readonly requestTimeoutMs: number;
  readonly maxMountBytes: number;
  readonly maxMountFiles: number;
  readonly maxFrameBytes: number;
  readonly installHosts: readonly string[];
  readonly installTimeoutMs: number;
  readonly logger: Logger;
  /** Registry `npx -y` specs are pinned against and installed from (setting `npmRegistry`). */
  readonly npmRegistry: string | undefined;
  /** The per-user lock file of pinned `npx -y` installs. */
  readonly pinLock: string;
  /** CA file the host trusts besides Node's roots, for asking the registry (NODE_EXTRA_CA_CERTS). */
  readonly extraCa: string | undefined;
}

/**
 * The `e2b` backend: each sandbox is an E2B Firecracker micro-VM with its own kernel. Synchronous
 * and free of I/O; the API key is checked when a sandbox is created.
 */
export function createE2BBackend(options: E2BBackendOptions = {}): SandboxBackend {
  const resolved = resolveOptions(options);
  return {
    specificationVersion: SPECIFICATION_VERSION,
    id: 'e2b',
    isolation: 'microvm',
    describe: () =>
      `E2B Firecracker micro-VM (template ${resolved.template}; API key sent to ${resolved.endpoints.keyHost})`,
    create: (spec, createOptions) => createSandbox(resolved, spec, createOptions),
  };
}

/** The name every backend module exports, so `--backend @mcpsandbox/backend-e2b` can load it. */
export const createBackend: (options?: E2BBackendOptions) => SandboxBackend = createE2BBackend;

function resolveOptions(options: E2BBackendOptions): ResolvedOptions {
  const env = options.hostEnv ?? process.env;
  const settings = options.settings ?? {};
  const text = (value: string | undefined) => (value === undefined || value === '' ? undefined : value);
  return {
    apiKey: text(options.apiKey) ?? text(env.E2B_API_KEY),
    template: text(options.template) ?? text(settings.template) ?? DEFAULT_TEMPLATE,
    endpoints: resolveEndpoints({
      domain: text(options.domain) ?? text(env.E2B_DOMAIN),
      apiUrl: text(options.apiUrl) ?? text(env.E2B_API_URL),
      // The SDK reads E2B_SANDBOX_URL from this process's environment when it is given none.
      sandboxUrl: text(options.sandboxUrl) ?? text(env.E2B_SANDBOX_URL) ?? text(process.env.E2B_SANDBOX_URL),
      settings,
    }),
    requestTimeoutMs:
      options.requestTimeoutMs ?? positive(settings, 'requestTimeoutMs') ?? DEFAULT_REQUEST_TIMEOUT_MS,
    maxMountBytes:
      options.maxMountBytes ?? positive(settings, 'maxMountBytes') ?? DEFAULT_MOUNT_LIMITS.maxBytes,
    maxMountFiles:
      options.maxMountFiles ?? positive(settings, 'maxMountFiles') ?? DEFAULT_MOUNT_LIMITS.maxFiles,
    maxFrameBytes: options.maxFrameBytes ?? positive(settings, 'maxFrameBytes') ?? DEFAULT_MAX_FRAME_BYTES,
    installHosts: [
      ...(options.installHosts ??
        (settings.installHosts === undefined
          ? [NPM_REGISTRY_HOST]
          : settings.installHosts
              .split(',')
              .map((host) => host.trim())
              .filter(Boolean))),
      // `--install-allow-net`: more hosts for the install step, on top of the registry.
      ...(settings.installAllowNet ?? '').split(',').filter(Boolean),
    ],
    installTimeoutMs:
      options.installTimeoutMs ?? positive(settings, 'installTimeoutMs') ?? DEFAULT_INSTALL_TIMEOUT_MS,
    logger: options.logger ?? silentLogger,
    npmRegistry: text(settings.npmRegistry),
    pinLock: defaultPinLockFile(env, env.HOME ?? homedir()),
    extraCa: text(env.NODE_EXTRA_CA_CERTS),
  };
}

function positive(settings: Readonly<Record<string, string>>, key: string): number | undefined {
  const raw = settings[key];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) {
    // Settings are user input (`--backend-option`); report it when it is used, not at load.
    return Number.NaN;
  }
  return value;
}

async function createSandbox(
  options: ResolvedOptions,
  spec: SandboxSpec,
  createOptions: CreateOptions = {},
): Promise<Sandbox> {
  // Everything that can be refused locally is refused before a (billed) VM exists.
  if (!options.apiKey) {
    throw new UsageError(
      'the e2b backend needs an API key: set E2B_API_KEY (get one at https://e2b.dev/dashboard?tab=keys)',
    );
  }
  for (const [key, value] of Object.entries({
    requestTimeoutMs: options.requestTimeoutMs,
    maxMountBytes: options.maxMountBytes,
    maxMountFiles: options.maxMountFiles,
    maxFrameBytes: options.maxFrameBytes,
    installTimeoutMs: options.installTimeoutMs,
  })) {
    if (Number.isNaN(value)) throw new UsageError(`e2b setting ${key} must be a positive integer`);
  }
  const endpoints = options.endpoints;
  if (endpoints.error) throw endpoints.error;
  if (endpoints.overridden) {
    options.logger.info(
      `e2b: the API key is sent to ${endpoints.keyHost} (set by E2B_API_URL or E2B_DOMAIN)`,
    );
  }
  if (!Number.isFinite(spec.ttlMs) || spec.ttlMs <= 0)
    throw new UsageError('the sandbox TTL must be positive');
  const egress = toE2BEgress(spec.network);
  const plan = await planCopy(spec.mounts ?? [], {
    maxBytes: options.maxMountBytes,
    maxFiles: options.maxMountFiles,
  });
  for (const link of plan.skippedLinks) {
    options.logger.warn(`mount: skipped ${link} (symlinks and special files are not copied)`);
  }
  if (createOptions.signal?.aborted) throw new AbortedError('sandbox creation was aborted');

  let sdk: SdkSandbox;
  try {
    sdk = await SdkSandbox.create(options.template, {
      apiKey: options.apiKey,
      // Explicit values so the SDK does not fall back to this process's own environment.
      debug: false,
      domain: endpoints.domain,
      apiUrl: endpoints.apiUrl,
      ...(endpoints.sandboxUrl ? { sandboxUrl: endpoints.sandboxUrl } : {}),
      requestTimeoutMs: options.requestTimeoutMs,
      // E2B kills the VM at this deadline whatever happens to this host.
      timeoutMs: spec.ttlMs,
      metadata: { createdBy: 'mcp-sandbox', sessionId: spec.sessionId },
      ...(egress.allowInternetAccess === false ? { allowInternetAccess: false } : {}),
      ...(egress.network
        ? { network: { allowOut: egress.network.allowOut, denyOut: egress.network.denyOut } }
        : {}),
      ...(createOptions.signal ? { signal: createOptions.signal } : {}),
    });
  } catch (error) {
    if (createOptions.signal?.aborted)
      throw new AbortedError('sandbox creation was aborted', { cause: error });
    throw wrapE2BError(error, `create a sandbox from template '${options.template}'`);
  }
  let envd: EnvdClient;
  try {
    envd = new EnvdClient(envdEndpoint(sdk), {
      maxFrameBytes: options.maxFrameBytes,
      requestTimeoutMs: options.requestTimeoutMs,
      redact: createRedactor(Object.values(spec.env)),
    });
  } catch (error) {
    await sdk.kill().catch(() => undefined);
    throw error;
  }
  // Mounts are planned (and refused) before the VM exists, but copied in only after the install.
  const sandbox = new E2BSandbox(sdk, envd, spec, {
    logger: options.logger,
    requestTimeoutMs: options.requestTimeoutMs,
    installHosts: egress.network || egress.allowInternetAccess === false ? options.installHosts : [],
    installTimeoutMs: options.installTimeoutMs,
    pin: (npxSpec) =>
      pinNpxSpec(npxSpec, {
        registry: options.npmRegistry ?? DEFAULT_NPM_REGISTRY,
        lockFile: options.pinLock,
        logger: options.logger,
        trust: { caFiles: [options.extraCa] },
      }),
    ...(options.npmRegistry ? { npmRegistry: options.npmRegistry } : {}),
    plan,
  });
  spec.onEvent?.({ type: 'network', scope: 'sandbox', egress: egress.summary });
  if (createOptions.signal?.aborted) {
    await sandbox.close();
    throw new AbortedError('sandbox creation was aborted');
  }
  return sandbox;
}
