/**
 * The per-user lock file of `npx -y` pins: read in full and validated (fail closed), changed
 * only while holding a mutex, replaced by one rename. The mutex is a file beside the lock made
 * with O_EXCL that names its owner's pid: starts racing for their first pins each re-read the
 * lock under it, so no start's pin is lost to another's rename. A mutex whose owner died is
 * broken by moving it aside and checking it was still the dead one's.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { UsageError } from './errors.js';

/** 2: pins keyed by package identity (name@version), the registry kept as information. */
export const PIN_LOCK_VERSION = 2;

/** A pinned resolution of one `npx -y` spec. */
export interface NpxPin {
  /** The registry it was first pinned from (information: a pin binds name@version to integrity). */
  readonly registry: string;
  /** The spec as the command gave it: `pkg`, `pkg@latest`, `@scope/pkg@1.2.3`. */
  readonly spec: string;
  readonly name: string;
  readonly version: string;
  /** npm's `dist.integrity` of that version's tarball (`sha512-…`). */
  readonly integrity: string;
  readonly pinnedAt: string;
}

export interface PinLock {
  readonly v: number;
  readonly pins: readonly NpxPin[];
  /** `uvx` pins (see python-pin.ts), kept in the same file under the same mutex. */
  readonly python: readonly PythonPin[];
}

/** One distribution of a pinned Python environment: its exact version and accepted hashes. */
export interface PythonDist {
  readonly name: string;
  readonly version: string;
  /** `sha256:<hex>` of every artifact the index listed for that version when it was pinned. */
  readonly hashes: readonly string[];
}

/** A pinned `uvx` requirement: keyed by index and requirement, the whole resolved set with hashes. */
export interface PythonPin {
  readonly index: string;
  readonly requirement: string;
  readonly dists: readonly PythonDist[];
  readonly pinnedAt: string;
}

/** PEP 503-normalizable names and PEP 440 versions, narrowed to what is safe as text and path. */
export const PYTHON_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$/;
export const PYTHON_VERSION = /^[0-9][0-9A-Za-z.!+_-]{0,63}$/;
export const PYTHON_HASH = /^sha256:[0-9a-f]{64}$/;

export const PIN_NAME = /^(?:@[A-Za-z0-9][A-Za-z0-9._~-]*\/)?[A-Za-z0-9][A-Za-z0-9._~-]*$/;
export const PIN_VERSION = /^\d{1,9}\.\d{1,9}\.\d{1,9}(?:-[0-9A-Za-z.-]{1,64})?(?:\+[0-9A-Za-z.-]{1,64})?$/;
export const PIN_INTEGRITY = /^sha(?:256|384|512)-[A-Za-z0-9+/]{20,100}={0,2}$/;

const MAX_LOCK_BYTES = 16 * 2 ** 20;

/**
 * Reads the lock file in full; a missing file is empty, a damaged one is an error (fail closed).
 * A version 1 lock (pins keyed by registry and spec) reads as is: its records are the same.
 */
export function readPinLock(file: string): PinLock {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { v: PIN_LOCK_VERSION, pins: [], python: [] };
    throw new UsageError(`cannot read the pin lock ${file}: ${(error as Error).message}`, { cause: error });
  }
  let text: string;
  try {
    const size = fstatSync(fd).size;
    if (size > MAX_LOCK_BYTES) throw new UsageError(`the pin lock ${file} is too large`);
    const buffer = Buffer.alloc(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, buffer, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    text = buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
  const fail = () =>
    new UsageError(`the pin lock ${file} is damaged; fix or remove it (every package is then pinned anew)`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw fail();
  }
  const lock = value as Partial<PinLock> | null;
  if (!lock || (lock.v !== 1 && lock.v !== PIN_LOCK_VERSION) || !Array.isArray(lock.pins)) throw fail();
  const pins: NpxPin[] = [];
  for (const pin of lock.pins as unknown[]) {
    const valid = validPin(pin);
    if (!valid) throw fail();
    pins.push(valid);
  }
  const rawPython = (lock as { python?: unknown }).python;
  if (rawPython !== undefined && !Array.isArray(rawPython)) throw fail();
  const python: PythonPin[] = [];
  for (const pin of (rawPython ?? []) as unknown[]) {
    const valid = validPythonPin(pin);
    if (!valid) throw fail();
    python.push(valid);
  }
  return { v: PIN_LOCK_VERSION, pins, python };
}

function validPythonPin(value: unknown): PythonPin | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { index, requirement, dists, pinnedAt } = value as Record<string, unknown>;
  if (typeof index !== 'string' || typeof requirement !== 'string' || typeof pinnedAt !== 'string')
    return undefined;
  if (!Array.isArray(dists) || dists.length === 0) return undefined;
  const valid: PythonDist[] = [];
  for (const dist of dists as unknown[]) {
    if (typeof dist !== 'object' || dist === null) return undefined;
    const { name, version, hashes } = dist as Record<string, unknown>;
    if (typeof name !== 'string' || !PYTHON_NAME.test(name)) return undefined;
    if (typeof version !== 'string' || !PYTHON_VERSION.test(version)) return undefined;
    if (!Array.isArray(hashes) || hashes.length === 0) return undefined;
    if (!hashes.every((hash) => typeof hash === 'string' && PYTHON_HASH.test(hash))) return undefined;
    valid.push({ name, version, hashes: hashes as string[] });
  }
  return { index, requirement, dists: valid, pinnedAt };
}

function validPin(value: unknown): NpxPin | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { registry, spec, name, version, integrity, pinnedAt } = value as Record<string, unknown>;
  const ok =
    typeof registry === 'string' &&
    typeof spec === 'string' &&
    typeof name === 'string' &&
    PIN_NAME.test(name) &&
    typeof version === 'string' &&
    PIN_VERSION.test(version) &&
    typeof integrity === 'string' &&
    PIN_INTEGRITY.test(integrity) &&
    typeof pinnedAt === 'string';
  return ok ? { registry, spec, name, version, integrity, pinnedAt } : undefined;
}

/**
 * Re-reads, changes and replaces the lock file atomically (0600, in a 0700 directory), holding
 * the mutex throughout: `change` sees every pin another start wrote before it. `change` may
 * throw (a refusal): the lock is then left as it was.
 */
export function updatePinLock(file: string, change: (pins: readonly NpxPin[]) => readonly NpxPin[]): void {
  rewriteLock(file, (lock) => ({ ...lock, pins: change(lock.pins) }));
}

/** {@link updatePinLock} for the `uvx` pins: the npm pins are kept as they are. */
export function updatePythonPins(
  file: string,
  change: (pins: readonly PythonPin[]) => readonly PythonPin[],
): void {
  rewriteLock(file, (lock) => ({ ...lock, python: change(lock.python) }));
}

function rewriteLock(file: string, change: (lock: PinLock) => PinLock): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const release = acquire(`${file}.lock`);
  try {
    const { pins, python } = change(readPinLock(file));
    const temp = `${file}.${randomBytes(8).toString('hex')}.tmp`;
    const body = python.length > 0 ? { v: PIN_LOCK_VERSION, pins, python } : { v: PIN_LOCK_VERSION, pins };
    writeFileSync(temp, `${JSON.stringify(body, null, 2)}\n`, {
      mode: 0o600,
      flag: 'wx',
    });
    renameSync(temp, file);
  } finally {
    release();
  }
}

/** How long a start waits for another's change of the lock (a change takes milliseconds). */
const WAIT_MS = 30_000;

/** Takes the mutex file `path` (O_EXCL), breaking it when its owner died; returns its release. */
function acquire(path: string): () => void {
  const token = `${process.pid} ${randomBytes(8).toString('hex')}`;
  const deadline = Date.now() + WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      try {
        writeSync(fd, token);
      } finally {
        closeSync(fd);
      }
      return () => releaseMutex(path, token);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = readOwner(path);
    if (owner !== undefined && !alive(owner.pid)) breakStale(path, owner.text);
    else if (owner === undefined && attempt > 0 && ageMs(path) > 10_000) breakStale(path, undefined);
    if (Date.now() > deadline) {
      throw new UsageError(
        `the pin lock ${dirname(path)} is held by process ${owner?.pid ?? '?'} for more than ${WAIT_MS / 1000} s; if no mcp-sandbox runs, remove ${path}`,
      );
    }
    sleep(5 + Math.floor(Math.random() * 20));
  }
}

/** Unlinks the mutex only if it is still ours (it may have been broken as stale meanwhile). */
function releaseMutex(path: string, token: string): void {
  if (readOwner(path)?.text === token) {
    try {
      unlinkSync(path);
    } catch {
      // gone already
    }
  }
}

/**
 * Moves a dead owner's mutex aside, then checks what was moved: if another start took the
 * mutex in between, it is put back (a link, which fails if a third took it meanwhile).
 */
function breakStale(path: string, seen: string | undefined): void {
  const aside = `${path}.${randomBytes(8).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch {
    return; // someone else broke or released it
  }
  try {
    const moved = readSmall(aside);
    if (seen !== undefined && moved !== seen) {
      try {
        linkSync(aside, path);
      } catch {
        // a third start holds the mutex now; the one we moved finds it not theirs on release
      }
    }
  } finally {
    try {
      unlinkSync(aside);
    } catch {
      // nothing to clean
    }
  }
}

function readOwner(path: string): { readonly pid: number; readonly text: string } | undefined {
  try {
    const text = readSmall(path);
    const match = /^([1-9]\d{0,9}) [0-9a-f]{16}$/.exec(text);
    return match ? { pid: Number(match[1]), text } : undefined;
  } catch {
    return undefined;
  }
}

/** A mutex file's few bytes: no link followed, no FIFO waited on, nothing large read. */
function readSmall(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) return '';
    const buffer = Buffer.alloc(64);
    return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function ageMs(path: string): number {
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return Date.now() - fstatSync(fd).mtimeMs;
    } finally {
      closeSync(fd);
    }
  } catch {
    return 0;
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

const pause = new Int32Array(new SharedArrayBuffer(4));

/** A short synchronous wait: the lock is changed by synchronous code. */
function sleep(ms: number): void {
  Atomics.wait(pause, 0, 0, ms);
}
