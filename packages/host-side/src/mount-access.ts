import { accessSync, constants, statSync } from 'node:fs';
import type { MountSpec } from '@mcpsandbox/core';

/**
 * A `rw` mount the sandbox's user cannot write is a silent `EACCES` later: say so at start, with
 * the fix. As root the sandbox runs as another uid (`runAs`), so root's own directories are not
 * writable inside; otherwise the sandbox user is this user.
 */
export function unwritableMountWarnings(
  mounts: readonly MountSpec[],
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): string[] {
  const warnings: string[] = [];
  for (const mount of mounts) {
    if (mount.mode !== 'rw' || writableBy(mount.hostPath, runAs)) continue;
    const who = runAs ? `uid ${runAs.uid}` : 'your user';
    let owner = '';
    try {
      const stat = statSync(mount.hostPath);
      owner = ` (owner uid ${stat.uid}, mode ${(stat.mode & 0o777).toString(8)})`;
    } catch {
      // described below without its owner
    }
    const fix = runAs
      ? `chown ${runAs.uid}:${runAs.gid} ${mount.hostPath} (or run mcp-sandbox as a normal user)`
      : `chmod u+w ${mount.hostPath}`;
    warnings.push(
      `--mount ${mount.hostPath}:${mount.sandboxPath}:rw: the sandbox runs as ${who}, which cannot write it${owner}; ` +
        `the server will get "permission denied". To let it write: ${fix}`,
    );
  }
  return warnings;
}

function writableBy(
  path: string,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): boolean {
  try {
    if (!runAs) {
      accessSync(path, constants.W_OK);
      return true;
    }
    const stat = statSync(path);
    const bits = stat.mode & 0o777;
    if (stat.uid === runAs.uid) return (bits & 0o200) !== 0;
    if (stat.gid === runAs.gid) return (bits & 0o020) !== 0;
    return (bits & 0o002) !== 0;
  } catch {
    return false;
  }
}
