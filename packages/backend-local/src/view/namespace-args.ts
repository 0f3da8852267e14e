/** The namespaces and the filesystem of one bubblewrap sandbox, as its arguments. */
import { type Bind, dedupeBinds } from '@mcpsandbox/host-side';
import { SANDBOX_TMP } from './system-view.js';

export interface NamespaceArgsInput {
  /** With egress the network namespace comes from the outer layer (network.ts). */
  readonly layered: boolean;
  /** The read-only system (see systemView). */
  readonly view: { readonly args: readonly string[]; readonly readOnly: readonly string[] };
  readonly roots: readonly string[];
  readonly shmSize: number;
  readonly tmpSize: number;
  readonly insideHome: string;
  /** The host directory bound as the home; undefined for an install step (a capped tmpfs). */
  readonly home: string | undefined;
  readonly binds: readonly Bind[];
  readonly userBinds: readonly Bind[];
  readonly bindArgs: (bind: Bind) => string[];
}

export function namespaceArgs(input: NamespaceArgsInput): string[] {
  const { roots, view } = input;
  const args = [
    '--unshare-user',
    '--unshare-ipc',
    '--unshare-pid',
    ...(input.layered ? [] : ['--unshare-net']),
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--hostname',
    'mcp-sandbox',
    ...view.args,
    '--dev',
    '/dev',
    // bwrap's /dev is itself an uncapped tmpfs: read-only, with a capped /dev/shm on top.
    '--remount-ro',
    '/dev',
    '--size',
    String(input.shmSize),
    '--tmpfs',
    '/dev/shm',
    '--proc',
    '/proc',
  ];
  const tmpfsRoots = roots.filter((root) => root !== SANDBOX_TMP);
  for (const root of tmpfsRoots) args.push('--tmpfs', root);
  // /tmp lives in memory, capped, one per command (shared with its children): nothing of it
  // reaches the host's disk or outlives the command's mount namespace.
  args.push('--size', String(input.tmpSize), '--tmpfs', SANDBOX_TMP);
  if (input.home === undefined) args.push('--size', String(input.tmpSize), '--tmpfs', input.insideHome);
  else args.push('--bind', input.home, input.insideHome);
  for (const bind of dedupeBinds(input.binds)) args.push(...input.bindArgs(bind));
  for (const bind of input.userBinds) args.push(...input.bindArgs(bind));
  // The hidden roots stay empty and read-only: the private home and tmp are the only writable places.
  for (const root of tmpfsRoots) args.push('--remount-ro', root);
  for (const dir of view.readOnly) args.push('--remount-ro', dir);
  return args;
}
