import { createHash } from 'node:crypto';
import { readdirSync, unlinkSync } from 'node:fs';
import type { PrepareOptions } from '@mcpsandbox/core';
import { SandboxFailureError } from '@mcpsandbox/core';
import { dirPath } from '../fd-paths.js';
import { at, closeDir, lstatAt, type OpenDir, openDirAt, readFileAt, removeAt } from '../host-fs.js';
import { isBinName, packageNameParts } from './spec.js';

/** Cache layout version: part of the key, so that entries of an older layout are never read. */
const LAYOUT = 'v3';

export function cacheKey(registry: string, spec: string): string {
  return createHash('sha256').update(`${LAYOUT}\n${registry}\n${spec}`).digest('hex').slice(0, 24);
}

/**
 * A cache entry, `<cacheRoot>/<key>/`, is a directory only the host ever writes. It holds the
 * install marker next to the install, never inside it:
 *
 *   <key>/install.json   written by the host (what was installed, which binary to run)
 *   <key>/pkg/           npm's prefix: the only directory the install step may write
 *
 * The install happens in `<key>.tmp-…/` (same layout), which moves to `<key>` in one rename.
 */
export const MARKER = 'install.json';
export const PREFIX = 'pkg';
/** In a staging directory only: the pid of the process installing there, for the sweep. */
export const OWNER = 'owner-pid';

/**
 * Drops an install's owner file once its staging directory is renamed into place (`staging` is
 * the same directory, now the entry): a start waiting for the install sees the owned staging
 * directory or the entry, never neither (then it would install the same again).
 */
export function dropOwner(staging: OpenDir): void {
  try {
    unlinkSync(at(staging.fd, OWNER));
  } catch {
    // left in the entry, where nothing reads it
  }
}
const STAGING = /^[0-9a-f]{24}\.tmp-/;
const MAX_MANIFEST_BYTES = 4 * 2 ** 20;

export interface Installed {
  readonly spec: string;
  readonly registry: string;
  readonly name: string;
  readonly bin: string;
  /** The integrity npm installed, checked against the pin before any of its code ran. */
  readonly integrity?: string;
}

const INTEGRITY = /^sha(?:256|384|512)-[A-Za-z0-9+/]{20,100}={0,2}$/;

/**
 * Another start (or its background install) is installing the same entry (npm's or uv's, read
 * by `read`): wait for it rather than download the same packages again beside it. Undefined
 * when no live install of the key is left and the entry is still missing: then this start installs.
 */
export async function waitForOthers<T>(
  root: OpenDir,
  key: string,
  options: PrepareOptions,
  say: (text: string) => void,
  read: (root: OpenDir, key: string) => T | undefined,
): Promise<T | undefined> {
  let told = false;
  for (;;) {
    const installed = read(root, key);
    if (installed) return installed;
    const owner = liveInstaller(root, key);
    // Gone: finished (renamed into place just now) or died; read once more to tell which.
    if (owner === undefined) return read(root, key);
    if (!told) say(`waiting for the install of this package already under way (process ${owner})`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, 250));
    options.signal?.throwIfAborted();
  }
}

/** The pid of a live process installing `key` (from its staging directory's owner file), if any. */
function liveInstaller(root: OpenDir, key: string): number | undefined {
  const uid = process.getuid?.() ?? 0;
  for (const name of readdirSync(dirPath(root.fd))) {
    if (!name.startsWith(`${key}.tmp-`)) continue;
    const dir = openDirAt(root, name);
    try {
      if (!dir || dir.stat.uid !== uid || (dir.stat.mode & 0o022) !== 0) continue;
      const pid = readFileAt(dir, [OWNER], 32)?.toString('latin1') ?? '';
      if (/^[1-9]\d{0,9}$/.test(pid) && processExists(Number(pid))) return Number(pid);
    } catch {
      // changed meanwhile: not a live install
    } finally {
      closeDir(dir);
    }
  }
  return undefined;
}

/**
 * Removes staging directories of installs whose process died (killed mid-install): only ours,
 * writable by no one else, with an owner file read no-follow; removed fd-relative.
 */
export function sweepStaging(root: OpenDir): void {
  const uid = process.getuid?.() ?? 0;
  for (const name of readdirSync(dirPath(root.fd))) {
    if (!STAGING.test(name)) continue;
    let dir: OpenDir | undefined;
    try {
      dir = openDirAt(root, name);
      if (!dir || dir.stat.uid !== uid || (dir.stat.mode & 0o022) !== 0) continue;
      const pid = readFileAt(dir, [OWNER], 32)?.toString('latin1') ?? '';
      if (!/^[1-9]\d{0,9}$/.test(pid) || processExists(Number(pid))) continue;
      const id = { dev: dir.stat.dev, ino: dir.stat.ino };
      closeDir(dir);
      dir = undefined;
      removeAt(root, name, id, { last: OWNER });
    } catch {
      // changed meanwhile, or not ours: leave it
    } finally {
      closeDir(dir);
    }
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The marker of a complete entry, or undefined. Read relative to the cache root, no symlink followed. */
export function readEntry(root: OpenDir, key: string): Installed | undefined {
  const entry = openDirAt(root, key);
  if (!entry) return undefined;
  try {
    const text = readFileAt(entry, [MARKER], 64 * 1024);
    if (!text) return undefined;
    const marker = parseMarker(text.toString('utf8'));
    if (!marker) return undefined;
    const bin = lstatAt(entry, [PREFIX, 'node_modules', '.bin', marker.bin]);
    return bin ? marker : undefined;
  } catch {
    return undefined;
  } finally {
    closeDir(entry);
  }
}

function parseMarker(text: string): Installed | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { spec, registry, name, bin, integrity } = value as Record<string, unknown>;
  if (typeof spec !== 'string' || typeof registry !== 'string') return undefined;
  if (typeof name !== 'string' || packageNameParts(name) === undefined) return undefined;
  if (typeof bin !== 'string' || !isBinName(bin)) return undefined;
  if (integrity !== undefined && (typeof integrity !== 'string' || !INTEGRITY.test(integrity)))
    return undefined;
  return { spec, registry, name, bin, ...(integrity === undefined ? {} : { integrity }) };
}

/**
 * Finds the installed package and the binary npx would run: its only bin, or the one named
 * after it. The manifests were written by the install: read without following links, parsed in
 * full, and every name taken from them checked before it becomes part of a path.
 */
export function describeInstall(
  prefix: OpenDir,
  spec: string,
  registry: string,
  integrity?: string,
): Installed {
  const manifest = parseJson(readFileAt(prefix, ['package.json'], MAX_MANIFEST_BYTES)) as {
    dependencies?: Record<string, string>;
  };
  const names = Object.keys(manifest?.dependencies ?? {});
  const name = names[0];
  if (!name || names.length !== 1) {
    throw new SandboxFailureError(`npm did not install exactly one package for ${spec}`, {
      code: 'E_PREPARE',
    });
  }
  const parts = packageNameParts(name);
  if (!parts)
    throw new SandboxFailureError(`npm installed a package with an invalid name for ${spec}`, {
      code: 'E_PREPARE',
    });
  const pkg = parseJson(
    readFileAt(prefix, ['node_modules', ...parts, 'package.json'], MAX_MANIFEST_BYTES),
  ) as {
    bin?: unknown;
  };
  const plain = parts[parts.length - 1]!;
  let bin: string | undefined;
  if (typeof pkg?.bin === 'string') bin = plain;
  else if (pkg?.bin && typeof pkg.bin === 'object') {
    const binNames = Object.keys(pkg.bin);
    bin = binNames.length === 1 ? binNames[0] : binNames.find((n) => n === plain);
  }
  if (!bin || !isBinName(bin)) {
    throw new SandboxFailureError(`${name} has no single binary to run; pass the command explicitly`, {
      code: 'E_PREPARE',
    });
  }
  if (!lstatAt(prefix, ['node_modules', '.bin', bin])) {
    throw new SandboxFailureError(`npm did not link the binary ${bin} of ${name}`, { code: 'E_PREPARE' });
  }
  return { spec, registry, name, bin, ...(integrity === undefined ? {} : { integrity }) };
}

function parseJson(bytes: Buffer | undefined): unknown {
  if (!bytes) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new SandboxFailureError('the install left a manifest that is not JSON', {
      code: 'E_PREPARE',
      cause: error,
    });
  }
}
