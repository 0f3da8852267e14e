/** The local backend's settings, parsed once at construction: sizes, install env, mounts, grants. */
import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { type MountSpec, UsageError } from '@mcpsandbox/core';
import { type NetGrant, parseGrant } from '@mcpsandbox/egress';
import { isInside, parseByteSize } from '@mcpsandbox/host-side';

/** Sizes are parsed as the install quota's are (host-side), so every size setting reads alike. */
export { parseByteSize };

export const DEFAULT_MAX_PROCESSES = 256;
/** `/tmp` and `/dev/shm` are tmpfs (memory): these caps bound what a server can pin there. */
export const DEFAULT_TMP_SIZE = 512 * 2 ** 20;
export const DEFAULT_SHM_SIZE = 256 * 2 ** 20;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The `installEnv` setting: a JSON object of variable names to string values. */
export function parseInstallEnv(text: string | undefined): Record<string, string> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const valid =
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.entries(value).every(([name, v]) => ENV_NAME.test(name) && typeof v === 'string');
  if (!valid) {
    throw new UsageError(
      'backend option installEnv must be a JSON object of variable names to strings; use --install-env KEY=value',
    );
  }
  return { ...(value as Record<string, string>) };
}

/**
 * Mount grants must name an existing host path and an absolute place inside; `systemView` makes
 * room for a target the read-only system lacks. The sandbox's own /, /proc and /dev are refused.
 */
export function checkMounts(mounts: readonly MountSpec[]): void {
  for (const mount of mounts) {
    if (!isAbsolute(mount.hostPath) || !isAbsolute(mount.sandboxPath)) {
      throw new UsageError(`mount paths must be absolute: ${mount.hostPath} -> ${mount.sandboxPath}`);
    }
    if (!existsSync(mount.hostPath)) throw new UsageError(`mount source does not exist: ${mount.hostPath}`);
    // Any absolute target works (see systemView), but not the sandbox's own /, /proc and /dev.
    if (mount.sandboxPath === '/' || ['/proc', '/dev'].some((place) => isInside(mount.sandboxPath, place))) {
      throw new UsageError(
        `cannot mount at ${mount.sandboxPath}: the sandbox's /, /proc and /dev are its own; choose another path`,
      );
    }
  }
}

export function parseGrants(allow: readonly string[] | undefined): NetGrant[] {
  return (allow ?? []).map(parseGrant);
}

/** A size setting (`tmpSize`, `shmSize`): undefined when absent, a usage error when malformed. */
export function sizeSetting(settings: Readonly<Record<string, string>>, key: string): number | undefined {
  const value = settings[key];
  if (value === undefined) return undefined;
  const bytes = parseByteSize(value);
  if (bytes === undefined) {
    throw new UsageError(
      `backend option ${key} must be a size such as 64M or 1G (at least 4096 bytes), not "${value}"`,
    );
  }
  return bytes;
}

/** A positive integer setting (`maxProcesses`). */
export function numberSetting(settings: Readonly<Record<string, string>>, key: string): number | undefined {
  const value = settings[key];
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number <= 0) {
    throw new UsageError(`backend option ${key} must be a positive integer, not "${value}"`);
  }
  return number;
}
