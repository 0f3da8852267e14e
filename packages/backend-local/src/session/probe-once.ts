/** The bubblewrap probe, run once per backend (again after a failure) and shared by its sandboxes. */
import type { Logger } from '@mcpsandbox/core';
import { type LocalSandboxInfo, probeLocalSandbox } from '../probe.js';

export function probeOnce(
  options: {
    readonly probe?: () => Promise<LocalSandboxInfo>;
    readonly runAsWhenRoot?: { readonly uid: number; readonly gid: number };
  },
  hostEnv: Readonly<Record<string, string | undefined>>,
  logger: Logger,
  onInfo: (info: LocalSandboxInfo) => void,
): () => Promise<LocalSandboxInfo> {
  let probing: Promise<LocalSandboxInfo> | undefined;
  return () => {
    probing ??= (
      options.probe?.() ??
      probeLocalSandbox({
        hostEnv,
        ...(options.runAsWhenRoot ? { runAsWhenRoot: options.runAsWhenRoot } : {}),
      })
    ).then((result) => {
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
}
