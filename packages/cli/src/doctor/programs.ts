import { open, realpath, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join, sep } from 'node:path';
import type { ProgramCandidate } from './types.js';

/** ELF, Mach-O (32/64-bit, both byte orders, universal) and PE headers: a native executable. */
const NATIVE_MAGIC = [
  Buffer.from([0x7f, 0x45, 0x4c, 0x46]),
  Buffer.from([0xfe, 0xed, 0xfa, 0xce]),
  Buffer.from([0xfe, 0xed, 0xfa, 0xcf]),
  Buffer.from([0xce, 0xfa, 0xed, 0xfe]),
  Buffer.from([0xcf, 0xfa, 0xed, 0xfe]),
  Buffer.from([0xca, 0xfe, 0xba, 0xbe]),
];

async function isNative(path: string): Promise<boolean> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, 'r');
    const head = Buffer.alloc(4);
    const { bytesRead } = await handle.read(head, 0, 4, 0);
    return (
      (bytesRead === 4 && NATIVE_MAGIC.some((magic) => magic.equals(head))) ||
      (bytesRead >= 2 && head[0] === 0x4d && head[1] === 0x5a)
    );
  } catch {
    return false;
  } finally {
    await handle?.close();
  }
}

async function realOrSelf(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return path;
  }
}

function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

async function worldWritable(path: string): Promise<boolean> {
  try {
    return ((await stat(path)).mode & 0o002) !== 0;
  } catch {
    return false;
  }
}

/**
 * The facts about `path` (found as `found` on PATH), or undefined when it is no executable file.
 * A sandbox could have written it when it lies in the working folder (by its PATH spelling or its
 * real path: a server's rw mount is often that folder) or in a folder anyone may write.
 */
export async function programCandidate(
  found: string,
  path: string,
  cwd: string,
): Promise<ProgramCandidate | undefined> {
  if (!isAbsolute(path)) return { path: found, real: path, native: false, writable: 'a relative PATH entry' };
  let real: string;
  try {
    real = await realpath(path);
    const info = await stat(real);
    if (!info.isFile() || (process.platform !== 'win32' && (info.mode & 0o111) === 0)) return undefined;
  } catch {
    return undefined;
  }
  const work = await realOrSelf(cwd);
  let writable: string | undefined;
  if (isAbsolute(cwd) && (isInside(path, cwd) || isInside(real, work))) writable = 'in the working folder';
  else if (
    (await worldWritable(real)) ||
    (await worldWritable(dirname(real))) ||
    (await worldWritable(dirname(path)))
  ) {
    writable = 'in a folder anyone may write';
  }
  return { path: found, real, native: await isNative(real), ...(writable ? { writable } : {}) };
}

/** Every file `name` is found as on `pathList`, in order, each with its facts. */
export async function programsOnPath(
  name: string,
  pathList: string,
  cwd: string,
): Promise<ProgramCandidate[]> {
  const out: ProgramCandidate[] = [];
  for (const dir of pathList.split(delimiter)) {
    if (dir === '') continue;
    const found = join(dir, name);
    if (!isAbsolute(dir)) {
      // Resolved against the working folder by whoever runs it: reported only if it is there.
      const there = await programCandidate(found, join(cwd, found), cwd);
      if (there) out.push({ path: found, real: found, native: false, writable: 'a relative PATH entry' });
      continue;
    }
    const candidate = await programCandidate(found, found, cwd);
    if (candidate && !out.some((c) => c.real === candidate.real)) out.push(candidate);
  }
  return out;
}
