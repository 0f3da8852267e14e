/**
 * What a backend knows of its machine, found once and shared by its sandboxes. A start runs no
 * trial sandbox of its own (two bwrap runs on every start): the first real sandbox is the trial,
 * and when bwrap never starts its child the full probe runs and its error names the fix.
 */
import type { Logger } from '@mcpsandbox/core';
import { type LocalHostInfo, type LocalSandboxInfo, localHostInfo, probeLocalSandbox } from '../probe.js';

export interface MachineCheck {
  /** What sessions need of the machine (no bwrap run); again after a failure. */
  readonly info: () => Promise<LocalHostInfo>;
  /** False until a sandbox has started here: until then a failed start is diagnosed. */
  readonly verified: () => boolean;
  /** A sandbox started: bwrap works here with the sandbox's flags. */
  readonly started: () => void;
  /**
   * A sandbox's bwrap ended before starting its child: rejects with the probe's typed error when
   * the machine cannot sandbox (and forgets what it knew, for the next create); resolves when the
   * probe passes, so that the failure is reported as it is.
   */
  readonly diagnose: () => Promise<void>;
}

export function probeOnce(
  options: {
    readonly probe?: () => Promise<LocalSandboxInfo>;
    readonly runAsWhenRoot?: { readonly uid: number; readonly gid: number };
  },
  hostEnv: Readonly<Record<string, string | undefined>>,
  logger: Logger,
  onInfo: (info: LocalHostInfo) => void,
): MachineCheck {
  const probeOptions = {
    hostEnv,
    ...(options.runAsWhenRoot ? { runAsWhenRoot: options.runAsWhenRoot } : {}),
  };
  let probing: Promise<LocalHostInfo> | undefined;
  // A probe a caller supplies is the whole verdict; the machine's own needs the first start.
  let verified = options.probe !== undefined;
  const info = () => {
    probing ??= (options.probe?.() ?? localHostInfo(probeOptions)).then((result) => {
      onInfo(result);
      for (const warning of result.warnings) logger.warn(warning);
      return result;
    });
    // A failed probe is retried on the next create: the user may have installed bwrap meanwhile.
    probing.catch(() => {
      probing = undefined;
    });
    return probing;
  };
  return {
    info,
    verified: () => verified,
    started: () => {
      verified = true;
    },
    diagnose: async () => {
      try {
        const full = await probeLocalSandbox(probeOptions);
        onInfo(full);
      } catch (error) {
        probing = undefined;
        throw error;
      }
    },
  };
}
