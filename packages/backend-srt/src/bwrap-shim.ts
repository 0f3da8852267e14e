import { accessSync, chmodSync, constants, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { shellQuote } from './launch.js';

/** srt's own temp on Linux: bound in from the host when it exists there (srt 0.0.83, not configurable). */
export const SRT_LINUX_SHARED_TMP = '/tmp/claude';
/** The prefix of the engine's own directory in the OS temp dir (the shims, the filter, the owner). */
export const ENGINE_DIR_PREFIX = 'mcp-sandbox-srt-bwrap-';
/** The descriptor the shim reads the seccomp layer from (`bwrap --seccomp`). */
const FILTER_FD = 7;

export interface ShimOptions {
  /** The seccomp layer's file (see setid-filter.ts), applied to every sandbox srt starts. */
  readonly filter?: string;
  /** setpriv, which drops to `runAs` (when the host is root) before bwrap runs. */
  readonly setpriv?: string;
  readonly runAs?: { readonly uid: number; readonly gid: number };
}

/**
 * The bwrap srt runs on Linux. For a sandbox (srt ends its arguments with `-- <shell> -c
 * <command>`), just before that `--`, after every mount of srt's: an empty read-only tmpfs over
 * `/tmp/claude` when the host has one (srt binds the host's, shared by every srt user, and has
 * no setting to drop it), and the seccomp layer. Any `--cap-add` srt asks for (CAP_SETFCAP, for
 * a uid-0 caller) is dropped. As root, bwrap runs as `runAs` with no capabilities and
 * no_new_privs, as `local` runs it. Any other call (`--help`, srt's probes) gets no mount and no
 * filter.
 */
export function bwrapShimScript(realBwrap: string, options: ShimOptions = {}): string {
  const dir = shellQuote(SRT_LINUX_SHARED_TMP);
  const drop =
    options.runAs && options.setpriv
      ? [
          shellQuote(options.setpriv),
          `--reuid=${options.runAs.uid}`,
          `--regid=${options.runAs.gid}`,
          '--clear-groups',
          '--no-new-privs',
          '--inh-caps=-all',
          '--bounding-set=-all',
          '--',
          '',
        ].join(' ')
      : '';
  return [
    '#!/bin/sh',
    '# mcp-sandbox: the bwrap sandbox-runtime runs (see bwrap-shim.ts).',
    'n=$#',
    'at=0',
    'if [ "$n" -ge 4 ]; then',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
    '  eval "sep=\\${$((n - 3))}" "flag=\\${$((n - 1))}"',
    '  if [ "$sep" = "--" ] && [ "$flag" = "-c" ]; then at=$((n - 3)); fi',
    'fi',
    'i=0',
    'skip=0',
    'for arg do',
    '  shift',
    '  i=$((i + 1))',
    '  if [ "$skip" = 1 ]; then skip=0; continue; fi',
    '  if [ "$i" -lt "$at" ] && [ "$arg" = --cap-add ]; then skip=1; continue; fi',
    '  if [ "$i" -eq "$at" ]; then',
    `    if [ -e ${dir} ]; then set -- "$@" --tmpfs ${dir} --remount-ro ${dir}; fi`,
    ...(options.filter ? [`    set -- "$@" --seccomp ${FILTER_FD}`] : []),
    '  fi',
    '  set -- "$@" "$arg"',
    'done',
    ...(options.filter
      ? [`if [ "$at" -gt 0 ]; then exec ${FILTER_FD}<${shellQuote(options.filter)} || exit 126; fi`]
      : []),
    `exec ${drop}${shellQuote(realBwrap)} "$@"`,
    '',
  ].join('\n');
}

/**
 * The socat srt runs, on the host (its bridge to our proxy) and inside (its relays): with a
 * parent-death signal, so that a killed bridge takes its host-side socat with it.
 */
export function socatShimScript(realSocat: string, setpriv: string): string {
  return [
    '#!/bin/sh',
    '# mcp-sandbox: socat that dies with its parent (see bwrap-shim.ts).',
    `exec ${shellQuote(setpriv)} --pdeathsig KILL -- ${shellQuote(realSocat)} "$@"`,
    '',
  ].join('\n');
}

/** The first executable `name` on `path`, resolved, or undefined. */
export function findTool(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return realpathSync(candidate);
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The first executable `bwrap` on `path`, resolved, or undefined. */
export function findBwrap(path: string | undefined): string | undefined {
  return findTool('bwrap', path);
}

export interface BwrapShim {
  /** The shims' own directory: host code runs from it, so no sandbox may write it. */
  readonly dir: string;
  readonly path: string;
  /** The socat shim, when one was written. */
  readonly socat?: string;
}

/**
 * Writes the shims into a new directory (0755, files 0555: the sandbox's own user runs the
 * socat shim inside; nobody but this user can change them) of the OS temp dir, which every
 * session denies but the shims, and removes it when this process exits. A killed process leaves
 * it to the next start's sweep (see sweep.ts).
 */
export function writeBwrapShim(
  realBwrap: string,
  options: ShimOptions & { readonly socat?: string; readonly filterBytes?: Uint8Array } = {},
): BwrapShim {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), ENGINE_DIR_PREFIX)));
  const write = (name: string, text: string | Uint8Array, mode: number) => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode, flag: 'wx' });
    chmodSync(path, mode);
    return path;
  };
  const filter = options.filterBytes ? write('setid.bpf', options.filterBytes, 0o444) : undefined;
  const path = write(
    'bwrap',
    bwrapShimScript(realBwrap, { ...options, ...(filter ? { filter } : {}) }),
    0o500,
  );
  const socat =
    options.socat && options.setpriv
      ? write('socat', socatShimScript(options.socat, options.setpriv), 0o555)
      : undefined;
  chmodSync(dir, socat ? 0o755 : 0o700);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return { dir, path, ...(socat ? { socat } : {}) };
}
