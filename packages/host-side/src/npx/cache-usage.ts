/**
 * What the install cache holds already, for its total quota: each complete entry's usage as the
 * host counted it when it sealed the entry (`usage.json`, next to the marker, written by the host
 * only), or, for an entry made before usage was kept, counted now (bounded by the entry limit);
 * and what other installs under way have written so far (their staging, counted now).
 */
import { closeDir, eachName, type OpenDir, openDirAt, readFileAt, writeFileAt } from '../host-fs.js';
import { measureTree, type TreeLimit } from '../tree-usage.js';
import { PREFIX } from './entries.js';
import type { InstallQuota } from './quota.js';

/** In a cache entry, beside the marker: what the seal counted below `pkg/`. */
export const USAGE = 'usage.json';
const ENTRY = /^[0-9a-f]{24}$/;
const STAGING = /^[0-9a-f]{24}\.tmp-/;

export function writeUsage(staging: OpenDir, usage: TreeLimit): void {
  writeFileAt(staging, USAGE, `${JSON.stringify({ files: usage.files, bytes: usage.bytes })}\n`);
}

export function readUsage(entry: OpenDir): TreeLimit | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileAt(entry, [USAGE], 4096)?.toString('utf8') ?? 'null');
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { files, bytes } = value as Record<string, unknown>;
  const count = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  return count(files) && count(bytes) ? { files: files as number, bytes: bytes as number } : undefined;
}

/**
 * One entry's usage: as kept, else counted (an entry past the entry limit counts as the limit).
 * A staging directory has no usage kept: counted as it is now.
 */
function entryUsage(root: OpenDir, name: string, quota: InstallQuota, staging: boolean): TreeLimit {
  const entry = openDirAt(root, name);
  if (!entry) return { files: 0, bytes: 0 };
  let pkg: OpenDir | undefined;
  try {
    const kept = readUsage(entry);
    if (kept) return kept;
    pkg = openDirAt(entry, PREFIX);
    if (!pkg) return { files: 0, bytes: 0 };
    const counted = measureTree(pkg, quota.entry);
    return typeof counted === 'string' ? quota.entry : counted;
  } catch {
    // An entry damaged or changed meanwhile counts as full, never as nothing; a staging
    // directory that changed was just published (counted next time) or removed.
    return staging ? { files: 0, bytes: 0 } : quota.entry;
  } finally {
    closeDir(pkg);
    closeDir(entry);
  }
}

/**
 * The cache's complete entries and other installs' staging together (not `own`, this install's
 * staging). The walk ends as soon as the sum is past the total (the answer is then "full"
 * whatever the rest holds), so its work is bounded too.
 */
export function cacheUsage(root: OpenDir, quota: InstallQuota, own: string): TreeLimit {
  let files = 0;
  let bytes = 0;
  const full = new Error('full');
  try {
    eachName(root.fd, (name) => {
      const staging = STAGING.test(name);
      if (!(ENTRY.test(name) || (staging && name !== own))) return;
      const usage = entryUsage(root, name, quota, staging);
      files += usage.files;
      bytes += usage.bytes;
      if (files > quota.total.files || bytes > quota.total.bytes) throw full;
    });
  } catch (error) {
    if (error !== full) throw error;
  }
  return { files, bytes };
}
