import type { SandboxRuntimeConfig } from '@anthropic-ai/sandbox-runtime';
import { type FsPlan, type SrtFilesystem, type SrtPlatform, srtFilesystem } from './policy.js';

/** Everything one process of a session is shown, as host paths. */
export interface SessionFsInput {
  readonly platform: SrtPlatform;
  readonly hostHome: string;
  /** This process's home: the private one, the `--state` home, or an install step's throwaway one. */
  readonly home: string;
  /** The session's private tmp. */
  readonly tmp: string;
  /** Where private dirs are made (the OS temp dir by default): denied like the other data roots. */
  readonly stateDir: string;
  /** The command, its interpreter and our own node, as `commandBinds` found them. */
  readonly runtime: readonly string[];
  /** srt's own package and (Linux) its bridge sockets. */
  readonly engine: {
    readonly packageDir: string;
    readonly bridgeSockets: readonly string[];
    /** Host code the sandbox runs (srt's socat shim on Linux). */
    readonly insideTools?: readonly string[];
  };
  readonly trustFiles: readonly string[];
  /** The server's package, its installed copy, `ro` mounts. */
  readonly readOnly: readonly string[];
  /** `rw` mounts and an install step's prefix. */
  readonly readWrite: readonly string[];
}

/**
 * The filesystem config srt gets for one process of a session. One function for the real
 * session and for the golden Seatbelt profiles, so that what the goldens show is what runs.
 */
export function sessionFilesystem(input: SessionFsInput): SrtFilesystem {
  const plan: FsPlan = {
    platform: input.platform,
    hostHome: input.hostHome,
    privateDirs: [input.home, input.tmp],
    readOnly: [
      ...input.runtime,
      input.engine.packageDir,
      ...input.engine.bridgeSockets,
      ...(input.engine.insideTools ?? []),
      ...input.trustFiles,
      ...input.readOnly,
    ],
    readWrite: input.readWrite,
    tmp: input.stateDir,
  };
  return srtFilesystem(plan);
}

/**
 * srt's process-wide config: no domains of its own (an empty list turns its network
 * restriction on) and both proxy ports at our host listener, so every connection meets the
 * session's grants in our egress proxy. Nothing per session lives here.
 */
export function srtManagerConfig(proxyPort: number): SandboxRuntimeConfig {
  return {
    network: {
      allowedDomains: [],
      deniedDomains: [],
      httpProxyPort: proxyPort,
      socksProxyPort: proxyPort,
    },
    filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
  };
}
