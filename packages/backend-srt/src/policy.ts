import { tmpdir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { type MountSpec, UsageError } from '@mcpsandbox/core';

/**
 * The OS whose sandbox srt drives: Seatbelt on macOS, bubblewrap on Linux. srt's Windows engine is
 * not used: it cannot pass the promise suite that holds `local` (see {@link WINDOWS_REFUSAL}).
 */
export type SrtPlatform = 'macos' | 'linux';

export function srtPlatformOf(platform: NodeJS.Platform): SrtPlatform | undefined {
  if (platform === 'darwin') return 'macos';
  if (platform === 'linux') return 'linux';
  return undefined;
}

/** What srt says on Windows: the supported path there is `local` inside WSL2. */
export const WINDOWS_REFUSAL =
  "the srt backend does not run on Windows (srt's Windows engine cannot keep the promises `local` keeps). Run mcp-sandbox inside WSL2, where `local` is bubblewrap: wsl.exe -e mcp-sandbox run … (install WSL2 with: wsl --install)";

/**
 * Where users keep their data on each OS. srt reads everything it is not told to deny, so these
 * are denied whole and only what a session needs is allowed back (see {@link srtFilesystem}).
 */
export function userDataRoots(
  platform: SrtPlatform,
  hostHome: string,
  tmp: string = tmpdir(),
  // Read by the Windows engine this backend no longer uses; kept so callers need not change.
  _env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const roots =
    platform === 'macos'
      ? ['/Users', '/var/root', '/Volumes', '/tmp', '/private/tmp', '/private/var/folders', '/var/folders']
      : ['/home', '/root', '/tmp', '/var/tmp', '/mnt', '/media', '/srv', '/run/user'];
  for (const extra of [hostHome, dirname(hostHome), tmp]) {
    if (extra !== '/' && !roots.includes(extra)) roots.push(extra);
  }
  return roots;
}

/**
 * srt makes these writable in every sandbox it makes (its own default temp, not configurable in
 * 0.0.83): one directory shared by every session and every other srt user on the host, so a
 * channel between them. Denied for writing; each session has its own tmp instead. (On Linux srt
 * still binds it back readable when it exists: see the README's limits.)
 */
export const SRT_SHARED_TMP: readonly string[] = ['/tmp/claude', '/private/tmp/claude'];

/** What one process of a session may see and change, before it becomes srt's config. */
export interface FsPlan {
  readonly platform: SrtPlatform;
  readonly hostHome: string;
  /** The session's private home and tmp: readable and writable. */
  readonly privateDirs: readonly string[];
  /** Read-only: the runtime, the server's package, srt's own package, `ro` mounts, TLS trust files. */
  readonly readOnly: readonly string[];
  /** `rw` mounts (the host path itself) and, for an install step, its own prefix. */
  readonly readWrite: readonly string[];
  readonly tmp?: string;
}

/** The filesystem half of srt's per-command config (`customConfig.filesystem`). */
export interface SrtFilesystem {
  readonly denyRead: string[];
  readonly allowRead: string[];
  readonly allowWrite: string[];
  readonly denyWrite: string[];
}

/**
 * Our promise, in srt's terms: no host file outside the plan. The user data roots are denied;
 * the plan's paths are allowed back (srt's allowRead wins over denyRead); writes go only to the
 * private dirs and rw mounts (srt denies writes everywhere else, and srt's own shared temp is
 * denied here).
 */
export function srtFilesystem(plan: FsPlan): SrtFilesystem {
  const unique = (paths: readonly string[]) => [...new Set(paths)];
  return {
    denyRead: userDataRoots(plan.platform, plan.hostHome, plan.tmp),
    allowRead: unique([...plan.privateDirs, ...plan.readOnly, ...plan.readWrite]),
    allowWrite: unique([...plan.privateDirs, ...plan.readWrite]),
    denyWrite: [...SRT_SHARED_TMP],
  };
}

/**
 * srt is path based: a host path is visible at its own path or not at all. A mount elsewhere, or
 * a private copy, cannot be honoured; say what works instead.
 */
export function checkPathMounts(mounts: readonly MountSpec[]): void {
  for (const mount of mounts) {
    if (mount.mode === 'copy') {
      throw new UsageError(
        `the srt backend cannot make a private copy of ${mount.hostPath}: it shows host paths in place. ` +
          `Mount it read-only (--mount ${mount.hostPath}:${mount.hostPath}:ro) or use --backend local`,
      );
    }
    if (resolve(mount.sandboxPath) !== resolve(mount.hostPath)) {
      throw new UsageError(
        `the srt backend shows host paths at their own path, so ${mount.hostPath} cannot appear at ` +
          `${mount.sandboxPath}: use --mount ${mount.hostPath}:${mount.hostPath}:${mount.mode}, or --backend local`,
      );
    }
  }
}
