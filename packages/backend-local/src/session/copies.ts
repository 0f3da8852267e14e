/** `copy` mounts: the host's private copy of each, made before any process of the sandbox exists. */
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { COPY_LIMITS, type SandboxSpec } from '@mcpsandbox/core';
import { copyIn } from '@mcpsandbox/host-side';
import type { LocalHostInfo } from '../probe.js';

/**
 * A private copy of each `copy` mount under the sandbox's directory `root`, recorded in `copies`
 * by its index in the spec as soon as it is made; bound read-write, removed with the rest on close.
 */
export async function stageCopies(
  root: string,
  spec: SandboxSpec,
  info: LocalHostInfo,
  copies: Map<number, string>,
): Promise<void> {
  for (const [index, mount] of (spec.mounts ?? []).entries()) {
    if (mount.mode !== 'copy') continue;
    const dir = join(root, 'copies');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (info.runAs) chownSync(dir, info.runAs.uid, info.runAs.gid);
    const dest = join(dir, String(index));
    const copied = await copyIn(mount.hostPath, dest, {
      limits: COPY_LIMITS,
      ...(info.runAs ? { owner: info.runAs } : {}),
    });
    copies.set(index, dest);
    spec.onEvent?.({ type: 'copied-in', sandboxPath: mount.sandboxPath, ...copied });
  }
}
