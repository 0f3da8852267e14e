/**
 * The writable copy of an `npx -y` server's own package on srt. srt shows host paths in place,
 * so the copy cannot be laid over the install as `local` does; instead the server runs from a
 * prefix of its own whose `node_modules` holds a real copy of its package and, for every other
 * entry of the install's `node_modules` (and every sibling in its `@scope/`), a link to the
 * read-only install. Node resolves the server's dependencies through those links (to their real
 * paths in the install), while the server's own files, and what it writes next to them, are in
 * the copy.
 *
 * The prefix is built inside an srt sandbox by a fixed script: the install read-only, the copy
 * the one writable path, no network, no environment. The host only makes the empty directory
 * and passes paths it chose: it never lists, reads or follows anything the install scripts or
 * the server wrote.
 */
import { chownSync, mkdirSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type ChildSandboxProcess, SandboxFailureError } from '@mcpsandbox/core';
import { type Bind, closeDir, openOwnedDir, type StateDirs } from '@mcpsandbox/host-side';

/** Where the copy's own `node_modules` is, below the copy directory. */
export const COPY_MODULES = 'node_modules';

/**
 * `$1` the install's node_modules, `$2` the copy directory, `$3` the package name (validated by
 * the host). Built in a fresh temp directory and renamed into place, so a killed build is never
 * taken for a copy; an existing `node_modules` is a kept copy (`--state`) and is left as it is.
 * Only `cp -P` and `ln -s` touch the install's names, as shell words, never as shell text.
 */
const FARM_SCRIPT = [
  'set -eu',
  'src=$1; dst=$2; name=$3',
  'umask 077',
  'if [ -d "$dst/node_modules" ] && [ ! -L "$dst/node_modules" ]; then exit 0; fi',
  'rm -rf "$dst"/.farm-*',
  'work=$(mktemp -d "$dst/.farm-XXXXXX")',
  'mkdir "$work/node_modules"',
  'scope=; own=$name',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansions, not templates
  'case $name in @*/*) scope=${name%%/*}; own=${name#*/} ;; esac',
  // Each entry of $1 into $2: $3 (and .bin, whose relative links then lead into the copy) copied, links kept as links; the rest linked.
  // No -p: the install may be another user's (local's install step runs as nobody), and its owner is not the copy's.
  'farm() {',
  '  for e in "$1"/* "$1"/.[!.]* "$1"/..?*; do',
  '    [ -e "$e" ] || [ -L "$e" ] || continue',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  '    b=${e##*/}',
  '    if [ "$b" = "$3" ] || [ "$b" = .bin ]; then cp -R -P "$e" "$2/$b"',
  '    elif [ -n "$4" ] && [ "$b" = "$4" ]; then',
  '      if [ -L "$e" ] || [ ! -d "$e" ]; then echo "the install\'s scope directory is not a directory" >&2; exit 3; fi',
  '      mkdir "$2/$b"; farm "$e" "$2/$b" "$5" ""',
  '    else ln -s "$e" "$2/$b"; fi',
  '  done',
  '}',
  'if [ -n "$scope" ]; then farm "$src" "$work/node_modules" "" "$scope" "$own"',
  'else farm "$src" "$work/node_modules" "$own" "" ""; fi',
  'if [ -L "$work/node_modules/$name" ] || [ ! -d "$work/node_modules/$name" ]; then',
  '  echo "the install holds no directory for the package" >&2; exit 3',
  'fi',
  'mv "$work/node_modules" "$dst/node_modules"',
  'rmdir "$work"',
].join('\n');

/** Runs one command in the sandbox: read-only and read-write host paths, no network, no env. */
export type CopyStep = (
  argv: readonly string[],
  readOnly: readonly string[],
  readWrite: readonly string[],
) => Promise<ChildSandboxProcess>;

export interface PackageCopy {
  /** The copy directory on the host (its real path): the server's one extra writable path. */
  readonly dir: string;
  /** Maps the install's inside path to the copy, for the command and the event. */
  readonly bind: Bind;
  readonly persistent: boolean;
}

/**
 * Makes (or, in a named state, reuses) the writable prefix for the package `name` installed at
 * `install` (the read-only bind of the npx step) and returns how to reach it.
 */
export async function packageCopy(options: {
  readonly install: Bind;
  readonly name: string;
  readonly key: string;
  readonly sessionRoot: string;
  readonly state: StateDirs | undefined;
  /** The sandbox's user when the host is root: the copy directory is made its. */
  readonly runAs?: { readonly uid: number; readonly gid: number } | undefined;
  readonly step: CopyStep;
  readonly signal?: AbortSignal;
}): Promise<PackageCopy> {
  const { install, name, state } = options;
  // Its own entry: a copy laid out for srt is not the one `local` binds over the package.
  const dir = state
    ? realDir(state.packageCopy(`srt-${options.key}`).dir)
    : sessionCopyDir(options.sessionRoot, options.runAs);
  const proc = await options.step(
    ['sh', '-c', FARM_SCRIPT, 'sh', join(install.source, 'node_modules'), dir, name],
    [install.source],
    [dir],
  );
  void proc.closeStdin();
  let said = '';
  const drain = async (stream: AsyncIterable<Uint8Array>) => {
    for await (const chunk of stream) said = (said + Buffer.from(chunk).toString()).slice(-1000);
  };
  const [status] = await Promise.all([proc.exit, drain(proc.stdout), drain(proc.stderr)]);
  options.signal?.throwIfAborted();
  if (status.code !== 0) {
    throw new SandboxFailureError(
      `could not make the server's package writable (the copy step exited ${status.code ?? status.signal}): ${printable(said)}`,
      { code: 'E_PREPARE' },
    );
  }
  return { dir, bind: { source: dir, dest: install.dest, mode: 'rw' }, persistent: state !== undefined };
}

/**
 * `<session root>/pkg`. The root is checked to be this user's and writable by no one else (no
 * sandbox can write it), so nothing but the host can have put a name there; `mkdir` refuses any
 * name that exists. (Not the fd-relative helpers: they need Linux's /proc, and srt runs on macOS.)
 */
function sessionCopyDir(
  root: string,
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): string {
  closeDir(openOwnedDir(root));
  const dir = join(root, 'pkg');
  mkdirSync(dir, { mode: 0o700 });
  if (runAs) chownSync(dir, runAs.uid, runAs.gid);
  return dir;
}

/**
 * The copy's real path (srt compares resolved paths): only its host-owned parent is resolved;
 * its last name is the one the host made there, which no sandbox can replace.
 */
function realDir(path: string): string {
  return join(realpathSync(dirname(path)), basename(path));
}

/** What the copy step said, without control characters (it may name files the install wrote). */
function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
  return text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
}
