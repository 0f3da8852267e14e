import { closeSync, readdirSync, readFileSync } from 'node:fs';

const O_CLOEXEC = 0o2000000;

/**
 * Closes the descriptors this process inherited without close-on-exec, beyond stdio: every child
 * would inherit them too, and the sandbox's first process is one (bubblewrap passes on what it
 * gets). A client may hold a socket or a directory there; a directory fd inside a sandbox is a way
 * out of its mount namespace. Node marks its own descriptors close-on-exec, and at start it marks
 * inherited ones up to the first gap above 15; a descriptor past a gap is still open. Node's IPC
 * channel, when there is one, is kept. Linux only; elsewhere nothing is read.
 */
export function closeInheritedDescriptors(): number[] {
  if (process.platform !== 'linux') return [];
  const keep = new Set([0, 1, 2, Number(process.env.NODE_CHANNEL_FD)]);
  const closed: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fd');
  } catch {
    return closed;
  }
  for (const entry of entries) {
    const fd = Number(entry);
    if (!Number.isInteger(fd) || keep.has(fd)) continue;
    let flags: number;
    try {
      const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
      flags = Number.parseInt(/^flags:\s*([0-7]+)/m.exec(info)?.[1] ?? '', 8);
    } catch {
      continue; // gone already (readdir's own descriptor)
    }
    if (Number.isNaN(flags) || (flags & O_CLOEXEC) !== 0) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // not ours to close after all
    }
  }
  return closed;
}
