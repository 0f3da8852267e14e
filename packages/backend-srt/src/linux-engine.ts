/**
 * What srt needs on Linux to keep every promise `local` keeps: the shims in front of its bwrap
 * and socat (see bwrap-shim.ts), the seccomp layer against set-id bits and file capabilities
 * (setid-filter.ts), a parent-death signal for everything it starts, and, as root, an
 * unprivileged user. A missing piece refuses the backend with the reason; it never runs weaker.
 */
import { chmodSync, chownSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { BackendUnavailableError } from '@mcpsandbox/core';
import { type BwrapShim, ENGINE_DIR_PREFIX, findTool, writeBwrapShim } from './bwrap-shim.js';
import { buildSetIdFilter, filterArchOf } from './setid-filter.js';
import { markOwner, recordSockets, sweepDead } from './sweep.js';

/** Who every sandboxed process runs as when this process is root: nobody, as under `local`. */
export const UNPRIVILEGED = { uid: 65534, gid: 65534 } as const;

export type RunAs = { readonly uid: number; readonly gid: number };

/** The user sandboxes run as: `UNPRIVILEGED` for a root host, the host's own user otherwise. */
export function runAsFor(uid: number | undefined): RunAs | undefined {
  return uid === 0 ? UNPRIVILEGED : undefined;
}

export interface LinuxShims extends BwrapShim {
  readonly setpriv: string;
}

/**
 * Writes this process's shims after sweeping those of dead processes. Undefined when there is
 * no bwrap (srt's own check then says so); throws when a promise could not be kept here.
 */
export function linuxShims(path: string | undefined, arch: string = process.arch): LinuxShims | undefined {
  const bwrap = findTool('bwrap', path);
  if (!bwrap) return undefined;
  const setpriv = findTool('setpriv', path);
  if (!setpriv) {
    throw new BackendUnavailableError(
      'the srt backend needs setpriv on Linux (util-linux): without it a killed bridge would leave the sandbox running, and as root the server could not be dropped to an unprivileged user. Install util-linux',
      { code: 'E_SRT_DEPENDENCIES' },
    );
  }
  const filterArch = filterArchOf(arch);
  if (!filterArch) {
    throw new BackendUnavailableError(
      `the srt backend has no seccomp layer for this CPU architecture (${arch}), so it cannot keep set-id files and file capabilities out of writable folders; use --backend local or --backend e2b`,
      { code: 'E_SRT_PLATFORM' },
    );
  }
  sweepDead(tmpdir(), ENGINE_DIR_PREFIX);
  const socat = findTool('socat', path);
  const runAs = runAsFor(process.getuid?.());
  const shim = writeBwrapShim(bwrap, {
    setpriv,
    filterBytes: buildSetIdFilter(filterArch),
    ...(socat ? { socat } : {}),
    ...(runAs ? { runAs } : {}),
  });
  markOwner(shim.dir);
  return { ...shim, setpriv };
}

/**
 * After srt made its bridge sockets: recorded for the sweep, and (as root) opened to the
 * sandbox's group, so that the relays inside, running as that user, can connect. They stay
 * root's: no sandbox can remove or replace them.
 */
export function adoptBridgeSockets(
  shimDir: string,
  sockets: readonly string[],
  runAs: RunAs | undefined,
): void {
  recordSockets(shimDir, sockets);
  if (!runAs) return;
  for (const socket of sockets) {
    chownSync(socket, process.getuid?.() ?? 0, runAs.gid);
    chmodSync(socket, 0o660);
  }
}
