import { sbplString } from '../sbpl/literal.js';
import { ancestors, checkTag, profilePath, type SeatbeltPlan } from './plan.js';
import {
  DEVICE_FILES,
  FINAL_DENY_PREFIXES,
  FINAL_DENY_REGEXES,
  FINAL_DENY_SUBPATHS,
  MACH_ALLOWLIST,
  OWN_FD_PATHS,
  PROTECTED_IN_MOUNTS,
  SEM_NAME_PREFIXES,
  SHM_READ_NAMES,
  SYSCTL_NAMES,
  SYSCTL_PREFIXES,
  SYSTEM_READ_FILES,
  SYSTEM_READ_ROOTS,
} from './system.js';

/** The prefix of every denial message this product's profiles log; the log reader keys on it. */
export const TAG_PREFIX = 'mcp-sandbox:';

const quoted = (value: string) => sbplString(value);
const filterLines = (kind: string, values: readonly string[]) =>
  values.map((v) => `  (${kind} ${quoted(v)})`);

function rule(head: string, filters: readonly string[], message?: string): string[] {
  if (filters.length === 0) return [];
  return [`(${head}`, ...filters, ...(message ? [`  (with message ${quoted(message)})`] : []), ')'];
}

const unique = (values: readonly string[]) => [...new Set(values)].sort();

/** The plan's paths in the spelling Seatbelt checks, refused where they cannot be expressed. */
function planPaths(plan: SeatbeltPlan) {
  const each = (values: readonly string[], what: string) => unique(values.map((v) => profilePath(v, what)));
  return {
    home: profilePath(plan.home, 'the session home'),
    tmp: profilePath(plan.tmp, 'the session tmp'),
    runtime: each(plan.runtime, 'the runtime path'),
    dylibDirs: each(plan.dylibDirs, 'the runtime library directory'),
    links: each(plan.runtimeLinks ?? [], 'the runtime link'),
    readOnly: each(plan.readOnly, 'the read-only path'),
    readWrite: each(plan.readWrite, 'the mount'),
    trustFiles: each(plan.trustFiles, 'the TLS trust file'),
  };
}

/**
 * The Seatbelt profile for one process of a session: deny everything, allow back the system
 * runtime, the plan's paths, a named IPC allowlist and the egress proxy's port, then deny the
 * firmlink spelling, terminals, packet filters and disks whatever was granted. Deterministic:
 * the same plan gives the same text (the goldens rely on it).
 */
export function generateProfile(plan: SeatbeltPlan): string {
  const tag = TAG_PREFIX + checkTag(plan.tag);
  const p = planPaths(plan);
  const writable = unique([p.home, p.tmp, ...p.readWrite]);
  const readable = unique([...p.runtime, ...p.dylibDirs, ...p.readOnly, ...p.trustFiles]);
  const parents = unique([...writable, ...readable, ...p.links].flatMap(ancestors).concat(p.links)).filter(
    (dir) => !writable.includes(dir) && !readable.includes(dir),
  );
  if (
    plan.proxyPort !== undefined &&
    !(Number.isInteger(plan.proxyPort) && plan.proxyPort > 0 && plan.proxyPort < 65536)
  ) {
    throw new RangeError(`proxy port ${plan.proxyPort} is not a TCP port`);
  }
  return [
    '(version 1)',
    `(deny default (with message ${quoted(tag)}))`,
    '',
    '; Processes: fork and exec what it may read; signals and process info only inside this sandbox.',
    '(allow process-fork)',
    '(allow signal (target same-sandbox))',
    '(allow process-info* (target same-sandbox))',
    ...rule('allow process-exec file-map-executable', [
      ...filterLines('subpath', [...SYSTEM_READ_ROOTS, ...readable, ...writable]),
    ]),
    '',
    ...ipcSection(),
    '',
    '; Reads: the system runtime, then what the plan names. Nothing else (no data roots).',
    ...rule('allow file-read*', [
      ...filterLines('subpath', SYSTEM_READ_ROOTS),
      ...filterLines('literal', SYSTEM_READ_FILES),
    ]),
    ...rule('allow file-read*', filterLines('subpath', readable)),
    '; The directories above them: stat only (module resolution walks up), never a listing.',
    ...rule('allow file-read-metadata', filterLines('literal', parents)),
    '',
    "; Devices as data; the process's own descriptors.",
    ...rule('allow file-read* file-write-data file-ioctl', filterLines('literal', DEVICE_FILES)),
    ...rule('allow file-read* file-write-data', filterLines('subpath', OWN_FD_PATHS)),
    '',
    // No hard links at all (file-link stays under `deny default`): whichever path the kernel
    // matches, the existing file's or the new name's, a link from a writable directory to a file
    // outside it would be a name that reads, or writes through to, that file.
    '; Writes: the session home and tmp, rw mounts. No hard links, anywhere.',
    ...rule('allow file-read* file-write*', filterLines('subpath', writable)),
    ...protectedSection(p.readWrite, tag),
    '',
    ...networkSection(plan.proxyPort),
    '',
    '; Last, whatever was granted: the firmlink spelling of the data volume, terminals, bpf, disks.',
    ...rule(
      'deny file*',
      [
        ...filterLines('subpath', FINAL_DENY_SUBPATHS),
        ...filterLines('prefix', FINAL_DENY_PREFIXES),
        ...filterLines('regex', FINAL_DENY_REGEXES),
      ],
      tag,
    ),
    '',
  ].join('\n');
}

function ipcSection(): string[] {
  return [
    '; Mach services, each for a reason; none that opens apps, sends Apple events or posts notifications.',
    '(allow mach-lookup',
    ...MACH_ALLOWLIST.flatMap((entry) => [`  ; ${entry.why}`, `  (global-name ${quoted(entry.name)})`]),
    ')',
    ...rule(
      'allow ipc-posix-shm-read-data ipc-posix-shm-read-metadata',
      filterLines('ipc-posix-name', SHM_READ_NAMES),
    ),
    '(allow ipc-posix-sem',
    ...SEM_NAME_PREFIXES.flatMap((entry) => [
      `  ; ${entry.why}`,
      `  (ipc-posix-name-prefix ${quoted(entry.name)})`,
    ]),
    ')',
    '; sysctls for CPU, memory and OS facts (no kern.proc.*: other processes stay unlisted).',
    ...rule('allow sysctl-read', [
      ...filterLines('sysctl-name', SYSCTL_NAMES),
      ...filterLines('sysctl-name-prefix', SYSCTL_PREFIXES),
    ]),
  ];
}

/** In each rw mount, git hooks, shell startup files and tool configs stay read-only. */
function protectedSection(mounts: readonly string[], tag: string): string[] {
  if (mounts.length === 0) return [];
  return [
    "; In rw mounts: what another program runs later with the user's rights stays read-only.",
    ...mounts.flatMap((mount) =>
      rule(
        'deny file-write* file-link',
        PROTECTED_IN_MOUNTS.map(
          (tail) =>
            `  (require-all (subpath ${quoted(mount)}) (regex ${quoted(`^${regexEscape(mount)}/(.*/)?${tail}`)}))`,
        ),
        tag,
      ),
    ),
  ];
}

/** A path as a regex that matches only itself (POSIX ERE and JS agree on these escapes). */
export function regexEscape(path: string): string {
  return path.replace(/[\\^$.*+?()[\]{}|]/g, (c) => `\\${c}`);
}

function networkSection(port: number | undefined): string[] {
  if (port === undefined) return ['; Network: none (no grants, no proxy).'];
  return [
    "; Network: only the egress proxy on loopback, which applies the session's grants.",
    `(allow network-outbound (remote ip ${quoted(`localhost:${port}`)}))`,
  ];
}
