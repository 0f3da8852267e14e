import type { BackendFactoryOptions, Sandbox, SandboxSpec } from '@mcpsandbox/core';
import type { Dialer, Resolver } from '@mcpsandbox/egress';
import type { HostNpmConfig } from '@mcpsandbox/host-side';
import type { LocalSandboxInfo } from './probe.js';

export interface LocalBackendOptions extends BackendFactoryOptions {
  /** Host directory for each sandbox's private home and tmp (default: the OS temp dir). */
  readonly stateDir?: string;
  /** Root of the persistent npx install cache (default `$XDG_CACHE_HOME/mcp-sandbox/npm`). */
  readonly npmCacheDir?: string;
  /** The npm registry installs may reach (default: `npm config get registry`). */
  readonly npmRegistry?: string;
  /** The host npm's settings, already read (the install worker, told by its start); default: asked of npm. */
  readonly npmConfig?: HostNpmConfig;
  /** Who the sandbox runs as when this process is root (default nobody, 65534). */
  readonly runAsWhenRoot?: { readonly uid: number; readonly gid: number };
  /** Process limit when the spec gives none (default 256; threads count too). */
  readonly defaultMaxProcesses?: number;
  /** Size cap of the in-memory `/tmp` of each command `exec` starts (default 512 MiB). */
  readonly tmpSizeBytes?: number;
  /** Size cap of the in-memory `/dev/shm` of each command `exec` starts (default 256 MiB). */
  readonly shmSizeBytes?: number;
  /** `--install-env`: variables for the npx install step only, never the server (also setting `installEnv`, JSON). */
  readonly installEnv?: Readonly<Record<string, string>>;
  /**
   * Install in this process, with the spec as given (no pinning): the background install worker
   * itself. Otherwise a first install runs in a detached worker that outlives an abandoned start.
   */
  readonly inlineInstall?: boolean;
  /** The install worker: the integrity the asking start pinned, which the install must have. */
  readonly pinnedIntegrity?: string;
  /** The install worker: the Python index its start chose for a uvx install. */
  readonly pythonIndex?: string;
  /**
   * The install worker: where an install hands what can wait until its start has the answer
   * (removing a uvx install's own cache); without it, that runs before the install returns.
   */
  readonly deferTidying?: (task: () => void) => void;
  /** The install worker: host paths the asking session mounts read-write (never the npm cache). */
  readonly sessionWritable?: readonly string[];
  /** Replaces the start-up probe (diagnostics and tests). */
  readonly probe?: () => Promise<LocalSandboxInfo>;
  /** Replaces DNS for the egress proxy (tests). */
  readonly resolve?: Resolver;
  /** Replaces the egress proxy's upstream connect to a checked address (tests). */
  readonly dial?: Dialer;
  /** Tests: trust for bound hosts' certificates under `--secret` (else this process's default trust). */
  readonly secretUpstreamCa?: string;
  /**
   * Forward the host's TLS trust variables (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, …) and make the
   * files they name visible read-only (default true; setting `hostTlsTrust=off`).
   */
  readonly hostTlsTrust?: boolean;
  /**
   * Without grants, still answer the sandbox's DNS lookups (all refused) so that each refused
   * name is reported with the flag that would allow it (default true; setting `denialHints=off`).
   */
  readonly denialHints?: boolean;
  /** Hands over a sandbox started before the program loaded, if any (`EarlyLocalStart`, early.ts). */
  readonly takeEarlyStart?: () => EarlyAdoption | undefined;
}

/** A sandbox made before the program loaded, given to `create` if it is the one asked for. */
export interface EarlyAdoption {
  adopt(options: LocalBackendOptions, spec: SandboxSpec): Promise<Sandbox | undefined>;
}
