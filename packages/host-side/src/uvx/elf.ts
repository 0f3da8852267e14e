import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** An ELF file: a shim (`#!/usr/bin/env bash` … `pyenv exec`) would need the home to run. */
export function isElf(path: string): boolean {
  let fd: number | undefined;
  try {
    if (!statSync(path).isFile()) return false;
    fd = openSync(path, 'r');
    const head = Buffer.alloc(4);
    return readSync(fd, head, 0, 4, 0) === 4 && head.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
