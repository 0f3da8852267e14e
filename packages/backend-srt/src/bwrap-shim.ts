import { accessSync, chmodSync, constants, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { shellQuote } from './launch.js';

/** srt's own temp on Linux: bound in from the host when it exists there (srt 0.0.83, not configurable). */
export const SRT_LINUX_SHARED_TMP = '/tmp/claude';

/**
 * The bwrap srt runs on Linux, with one mount added last: an empty read-only tmpfs over
 * `/tmp/claude`. srt binds the host's `/tmp/claude` into every sandbox (its own default temp,
 * one directory for every srt user on the host) and has no setting to drop it; a mount later in
 * bwrap's arguments is the one the command sees. srt ends every sandbox's arguments with
 * `-- <shell> -c <command>`: the mount goes just before that `--`, after every mount of srt's
 * (including those it passes through `--args`). Any other call (`--help`, srt's probe) is passed on
 * unchanged. Only when the host directory exists: otherwise srt binds nothing there, and a mount
 * point under a read-only `/tmp` could not be made.
 */
export function bwrapShimScript(realBwrap: string): string {
  const dir = shellQuote(SRT_LINUX_SHARED_TMP);
  return [
    '#!/bin/sh',
    '# mcp-sandbox: hides the host /tmp/claude that sandbox-runtime binds into every sandbox.',
    'n=$#',
    'at=0',
    `if [ "$n" -ge 4 ] && [ -e ${dir} ]; then`,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
    '  eval "sep=\\${$((n - 3))}" "flag=\\${$((n - 1))}"',
    '  if [ "$sep" = "--" ] && [ "$flag" = "-c" ]; then at=$((n - 3)); fi',
    'fi',
    'i=0',
    'for arg do',
    '  shift',
    '  i=$((i + 1))',
    `  if [ "$i" -eq "$at" ]; then set -- "$@" --tmpfs ${dir} --remount-ro ${dir}; fi`,
    '  set -- "$@" "$arg"',
    'done',
    `exec ${shellQuote(realBwrap)} "$@"`,
    '',
  ].join('\n');
}

/** The first executable `bwrap` on `path`, resolved, or undefined. */
export function findBwrap(path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, 'bwrap');
    try {
      accessSync(candidate, constants.X_OK);
      return realpathSync(candidate);
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface BwrapShim {
  /** The shim's own directory: host code runs from it, so no sandbox may write it. */
  readonly dir: string;
  readonly path: string;
}

/**
 * Writes the shim into a new private directory (0700, the file 0500) of the OS temp dir, which
 * every session denies, and removes it when this process exits.
 */
export function writeBwrapShim(realBwrap: string): BwrapShim {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-sandbox-srt-bwrap-')));
  const path = join(dir, 'bwrap');
  writeFileSync(path, bwrapShimScript(realBwrap), { mode: 0o500, flag: 'wx' });
  chmodSync(path, 0o500);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return { dir, path };
}
