/** Starts bubblewrap: directly, or as root through the staging step that binds what nobody may reach. */
import type { ChildProcess, StdioOptions } from 'node:child_process';
import { startChild } from '../child-process.js';
import type { LocalHostInfo } from '../probe.js';

/** A bare name not on the host: the sandbox's shell looks it up, and says so when it is not there. */
export function lookInsideTarget(command: readonly string[]): string[] {
  return [
    '/bin/sh',
    '-c',
    'command -v "$0" >/dev/null 2>&1 || { echo "mcp-sandbox: command not found: $0 (not on this machine, nor on the sandbox PATH)" >&2; exit 127; }; exec "$0" "$@"',
    ...command,
  ];
}

export async function startBwrap(
  info: LocalHostInfo,
  bwrapArgv: readonly string[],
  staged: readonly string[],
  env: Record<string, string>,
  stdio: StdioOptions,
): Promise<ChildProcess> {
  if (staged.length > 0 && info.runAs && info.staging) {
    const { unshare, mount, setpriv } = info.staging;
    const script = `while [ "$1" != -- ]; do "$0" --bind "$1" "$2" || exit 126; shift 2; done; shift; exec "$@"`;
    const { uid, gid } = info.runAs;
    return startChild(
      unshare,
      [
        '--mount',
        '--propagation',
        'private',
        '--',
        '/bin/sh',
        '-c',
        script,
        mount,
        ...staged,
        '--',
        setpriv,
        `--reuid=${uid}`,
        `--regid=${gid}`,
        '--clear-groups',
        '--',
        ...bwrapArgv,
      ],
      { env, stdio },
    );
  }
  return startChild(bwrapArgv[0] as string, bwrapArgv.slice(1), {
    env,
    stdio,
    ...(info.runAs ? { uid: info.runAs.uid, gid: info.runAs.gid } : {}),
  });
}
