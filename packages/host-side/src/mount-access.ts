import { spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, statSync } from 'node:fs';
import type { MountSpec } from '@mcpsandbox/core';

export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/**
 * A `rw` mount the sandbox's user cannot write is a silent `EACCES` later: say so at start, with
 * the fix. As root the sandbox runs as another uid (`runAs`), so root's own directories are not
 * writable inside; otherwise the sandbox user is this user.
 *
 * As root the fix never changes the project's owner: running the sandbox as root (or as the
 * owner) would hand the server that uid's reach on this host, so the offer is an ACL entry for
 * the sandbox's uid, with default entries so what the server creates stays the owner's to edit.
 */
export function unwritableMountWarnings(mounts: readonly MountSpec[], runAs: RunAs | undefined): string[] {
  const warnings: string[] = [];
  for (const mount of mounts) {
    if (mount.mode !== 'rw' || writableBy(mount.hostPath, runAs)) continue;
    const who = runAs ? `uid ${runAs.uid}` : 'your user';
    let owner: number | undefined;
    let shown = '';
    try {
      const stat = statSync(mount.hostPath);
      owner = stat.uid;
      shown = ` (owner uid ${stat.uid}, mode ${(stat.mode & 0o777).toString(8)})`;
    } catch {
      // described below without its owner
    }
    const fix = runAs ? aclFix(mount.hostPath, runAs, owner) : `chmod u+w ${shellWord(mount.hostPath)}`;
    warnings.push(
      `--mount ${mount.hostPath}:${mount.sandboxPath}:rw: the sandbox runs as ${who}, which cannot write it${shown}; ` +
        `the server will get "permission denied". To let it write: ${fix}`,
    );
  }
  return warnings;
}

/** `setfacl` for the sandbox's uid, leaving owner and mode as they are; or run as a normal user. */
function aclFix(path: string, runAs: RunAs, owner: number | undefined): string {
  const keepOwner = owner === undefined ? '' : `,d:u:${owner}:rwX`;
  return (
    `setfacl -R -m u:${runAs.uid}:rwX,d:u:${runAs.uid}:rwX${keepOwner} ${shellWord(path)} ` +
    '(its owner stays as it is; needs the acl package and a file system with ACLs), ' +
    'or run mcp-sandbox as a normal user'
  );
}

/** A path as one shell word: bare when it is plainly safe, else single-quoted. */
function shellWord(path: string): string {
  return /^[A-Za-z0-9_./+:@%=-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

/**
 * Whether `runAs` may write the directory itself. The sandbox binds it (the staging step reaches
 * it whatever its parents allow), so its ancestors do not count: the check is made by a child
 * running as `runAs` on an open descriptor of the directory, which sees the mode, the ACL and the
 * file system's read-only flag exactly as the sandbox will.
 */
function writableBy(path: string, runAs: RunAs | undefined): boolean {
  try {
    if (!runAs) {
      accessSync(path, constants.W_OK);
      return true;
    }
    // Only a directory or a regular file is opened: opening a device can do things of its own.
    const kind = statSync(path);
    if (!kind.isDirectory() && !kind.isFile()) return modeAllows(path, runAs);
    const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const probe = spawnSync('/bin/sh', ['-c', 'test -w /proc/self/fd/3'], {
        stdio: ['ignore', 'ignore', 'ignore', fd],
        uid: runAs.uid,
        gid: runAs.gid,
        timeout: 5_000,
      });
      if (probe.error === undefined && probe.status !== null) return probe.status === 0;
    } finally {
      closeSync(fd);
    }
    return modeAllows(path, runAs);
  } catch {
    return false;
  }
}

/** The mode bits alone, when no child could be started to ask (ACLs unseen). */
function modeAllows(path: string, runAs: RunAs): boolean {
  const stat = statSync(path);
  const bits = stat.mode & 0o777;
  if (stat.uid === runAs.uid) return (bits & 0o200) !== 0;
  if (stat.gid === runAs.gid) return (bits & 0o020) !== 0;
  return (bits & 0o002) !== 0;
}
