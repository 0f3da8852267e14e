/**
 * What the install cache holds and what is being installed into it, for `doctor` and `ls`: the
 * complete entries (their usage as the host counted it when it sealed them) and the installs
 * under way (staging directories whose installing process is alive). Everything read here was
 * written by the host (markers, usage, the installing note) and is read no-follow, bounded, and
 * parsed in full; what is shown of a spec is escaped by the caller's terminal writer.
 */
import { escapeControls } from '@mcpsandbox/core';
import {
  closeDir,
  eachName,
  type OpenDir,
  openDirAt,
  openOwnedDir,
  readFileAt,
  writeFileAt,
} from '../host-fs.js';
import { readUsage } from './cache-usage.js';
import { OWNER } from './entries.js';

/** In a staging directory only, beside the owner pid: what it installs and since when. */
export const INSTALLING = 'installing.json';
const ENTRY = /^[0-9a-f]{24}$/;
const STAGING = /^[0-9a-f]{24}\.tmp-/;
/** The most entries looked at: a cache larger than this is reported as "at least". */
const MAX_NAMES = 100_000;

export interface InstallInProgress {
  readonly spec: string;
  readonly pid: number;
  /** ISO time the install started. */
  readonly since: string;
}

export interface InstallCacheStatus {
  readonly root: string;
  readonly entries: number;
  readonly bytes: number;
  readonly installing: readonly InstallInProgress[];
}

export function writeInstalling(staging: OpenDir, spec: string): void {
  writeFileAt(staging, INSTALLING, `${JSON.stringify({ spec, since: new Date().toISOString() })}\n`);
}

/** The cache at `root`; undefined when it does not exist or is not the host's own. */
export function installCacheStatus(root: string): InstallCacheStatus | undefined {
  let dir: OpenDir;
  try {
    dir = openOwnedDir(root);
  } catch {
    return undefined;
  }
  let entries = 0;
  let bytes = 0;
  const installing: InstallInProgress[] = [];
  try {
    let seen = 0;
    eachName(dir.fd, (name) => {
      if (++seen > MAX_NAMES) return;
      if (ENTRY.test(name)) {
        entries++;
        bytes += entryBytes(dir, name);
      } else if (STAGING.test(name)) {
        const found = inProgress(dir, name);
        if (found) installing.push(found);
      }
    });
  } finally {
    closeDir(dir);
  }
  return { root, entries, bytes, installing };
}

function entryBytes(root: OpenDir, name: string): number {
  const entry = openDirAt(root, name);
  try {
    return entry ? (readUsage(entry)?.bytes ?? 0) : 0;
  } catch {
    return 0;
  } finally {
    closeDir(entry);
  }
}

function inProgress(root: OpenDir, name: string): InstallInProgress | undefined {
  let dir: OpenDir | undefined;
  try {
    dir = openDirAt(root, name);
    if (!dir || dir.stat.uid !== (process.getuid?.() ?? 0) || (dir.stat.mode & 0o022) !== 0) return undefined;
    const pid = readFileAt(dir, [OWNER], 32)?.toString('latin1') ?? '';
    if (!/^[1-9]\d{0,9}$/.test(pid) || !alive(Number(pid))) return undefined;
    const note = JSON.parse(readFileAt(dir, [INSTALLING], 4096)?.toString('utf8') ?? 'null') as unknown;
    const { spec, since } = (typeof note === 'object' && note !== null ? note : {}) as Record<
      string,
      unknown
    >;
    if (typeof spec !== 'string' || typeof since !== 'string') return undefined;
    return {
      spec: escapeControls(spec.slice(0, 300)),
      pid: Number(pid),
      since: escapeControls(since.slice(0, 40)),
    };
  } catch {
    return undefined;
  } finally {
    closeDir(dir);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
