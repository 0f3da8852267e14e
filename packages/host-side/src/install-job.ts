/**
 * What a background install is asked to do and what it answers: the npx install step hands a
 * job to a backend's worker (its own process, detached) and reads the result back.
 */
export interface InstallJob {
  /** The exact spec to install (already pinned by the start that asked). */
  readonly spec: string;
  /** The integrity the start pinned: the install must have it, or it is refused. */
  readonly integrity?: string;
  /** Host paths the asking session mounts read-write: never taken for the user's npm cache. */
  readonly writable?: readonly string[];
  readonly cacheRoot: string;
  readonly registry: string;
  readonly installHosts: readonly string[];
  readonly installEnv: Readonly<Record<string, string>>;
  /** Whether the fetch may use the user's npm cache, and the places it must keep clear of. */
  readonly userCache: boolean;
  readonly stateDir: string;
  readonly stateRoot?: string;
  readonly runAsWhenRoot?: { readonly uid: number; readonly gid: number };
  readonly deadlineMs: number;
  /** The host npm's settings as the asking start read them: the worker does not ask npm again. */
  readonly npmConfig?: HostNpmConfig;
  /** A uvx environment rather than an npm package (then `spec` is its requirement). */
  readonly uvx?: UvxJob;
}

/** What a uvx install is, as the asking start parsed and validated it. */
export interface UvxJob {
  /** `name` or `name==version`, built from validated parts. */
  readonly requirement: string;
  /** The console script the environment must have. */
  readonly bin: string;
  /** The index the asking start chose (the worker does not read the user's settings again). */
  readonly index: string;
}

export type InstallResult = (
  | { readonly ok: true }
  | { readonly ok: false; readonly message: string; readonly code: string; readonly exitCode?: number }
) & {
  /** What the install told its user on the way (mcp-sandbox's own words, not the package's). */
  readonly notes?: readonly string[];
};

export interface StartedWorker {
  readonly stderr: AsyncIterable<Uint8Array>;
  /** The result the worker printed, or a failure if it died without one. */
  readonly result: Promise<InstallResult>;
  /** Stop listening: the worker goes on alone, within its own deadline. */
  detach(): void;
}

/** The host npm's registry and TLS trust (never its credentials), which the install inside needs. */
export interface HostNpmConfig {
  readonly registry: string;
  readonly cafile: string | undefined;
  readonly strictSsl: boolean;
  /** npm's cache directory as configured (user-written: checked before any use). */
  readonly cache: string | undefined;
  /** With `--project-npmrc` only: the file the registry came from, or the user's own config. */
  readonly registrySource?: string;
}
