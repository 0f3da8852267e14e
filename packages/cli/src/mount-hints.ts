import type { IsolationLevel, MountHint, MountSpec } from '@mcpsandbox/core';
import { pathMountsFor } from './config/path-mounts.js';

/** Paths printed as they are in a suggested flag; others are single-quoted, or get no hint. */
const PLAIN = /^[A-Za-z0-9._/@+,=~-]+$/;
const QUOTABLE = /^[\p{L}\p{N} ._/@+,=~()&-]+$/u;
/**
 * What an OS sandbox hides of the host: it shows the rest of the root read-only, so a path
 * elsewhere is visible already. A micro-VM shows nothing of the host.
 */
const HIDDEN_BY_OS_SANDBOX = [
  '/home',
  '/root',
  '/tmp',
  '/var/tmp',
  '/mnt',
  '/media',
  '/Users',
  '/Volumes',
  '/private',
];

/**
 * The host paths a server's command line names that exist here, that the sandbox will not show,
 * and that `wrap` would mount (never the home, a folder above it, its hidden or settings folders,
 * a hidden root or a system tree): for each, the `--mount` flag (read-only) that shows it. Under
 * a backend with no sandbox filesystem (`none`, `vm`) the server sees the host's paths or none.
 */
export function mountHintsFor(
  command: readonly string[],
  mounts: readonly MountSpec[],
  isolation: IsolationLevel,
  home: string | undefined,
): MountHint[] {
  if (isolation === 'none' || isolation === 'language') return [];
  const { mounts: candidates } = pathMountsFor(command, home ? { home } : {});
  const hints: MountHint[] = [];
  for (const { path } of candidates) {
    if (isolation === 'os' && !HIDDEN_BY_OS_SANDBOX.some((root) => path.startsWith(`${root}/`))) continue;
    if (mounts.some((mount) => shows(mount, path))) continue;
    const flag = mountFlag(path);
    if (flag) hints.push({ path, flag });
  }
  return hints;
}

function shows(mount: MountSpec, path: string): boolean {
  const inside = mount.sandboxPath.replace(/(.)\/$/, '$1');
  return mount.hostPath === mount.sandboxPath && (path === inside || path.startsWith(`${inside}/`));
}

function mountFlag(path: string): string | undefined {
  if (PLAIN.test(path)) return `--mount ${path}`;
  return QUOTABLE.test(path) ? `--mount '${path}'` : undefined;
}
