import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runSeccompFilter } from '../src/filter/bpf.js';
import { buildSeccompFilter } from '../src/filter/build.js';
import {
  AF_INET,
  AF_INET6,
  AF_NETLINK,
  AF_PACKET,
  AF_UNIX,
  AF_VSOCK,
  ENOSYS,
  EPERM,
  PR_SET_PDEATHSIG,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  SOCK_DGRAM,
  SOCK_RAW,
  SOCK_SEQPACKET,
  SOCK_STREAM,
} from '../src/filter/constants.js';
import {
  allowedSyscallsOf,
  auditArchOf,
  filterSize,
  type SeccompArch,
  syscallNumber,
} from '../src/filter/syscalls.js';
import { createLocalBackend, createNoneBackend } from '../src/index.js';
import { run } from './helpers.js';

const ALLOW = SECCOMP_RET_ALLOW;
const REFUSE = SECCOMP_RET_ERRNO | EPERM;
const UNKNOWN = SECCOMP_RET_ERRNO | ENOSYS;
const SOCK_CLOEXEC = 0o2000000;
const SOCK_NONBLOCK = 0o4000;
const O_WRONLY = 0o1;
const O_CREAT = 0o100;
const O_TMPFILE = 0o20000000 | 0o200000;

// What a server never needs: none of these may pass, on either table. [name, x86_64, generic]
const REFUSED: readonly (readonly [string, number | null, number | null])[] = [
  ['ptrace', 101, 117],
  ['process_vm_readv', 310, 270],
  ['process_vm_writev', 311, 271],
  ['pidfd_getfd', 438, 438],
  ['kcmp', 312, 272],
  ['process_madvise', 440, 440],
  ['personality', 135, 92],
  ['modify_ldt', 154, null],
  ['set_thread_area', 205, null],
  ['add_key', 248, 217],
  ['request_key', 249, 218],
  ['keyctl', 250, 219],
  ['bpf', 321, 280],
  ['perf_event_open', 298, 241],
  ['userfaultfd', 323, 282],
  ['io_uring_setup', 425, 425],
  ['io_uring_enter', 426, 426],
  ['io_uring_register', 427, 427],
  ['mount', 165, 40],
  ['umount2', 166, 39],
  ['pivot_root', 155, 41],
  ['chroot', 161, 51],
  ['unshare', 272, 97],
  ['setns', 308, 268],
  ['clone3', 435, 435],
  ['open_tree', 428, 428],
  ['move_mount', 429, 429],
  ['fsopen', 430, 430],
  ['fsmount', 432, 432],
  ['mount_setattr', 442, 442],
  ['init_module', 175, 105],
  ['finit_module', 313, 273],
  ['delete_module', 176, 106],
  ['kexec_load', 246, 104],
  ['reboot', 169, 142],
  ['swapon', 167, 224],
  ['syslog', 103, 116],
  ['acct', 163, 89],
  ['name_to_handle_at', 303, 264],
  ['open_by_handle_at', 304, 265],
  ['openat2', 437, 437],
  ['fanotify_init', 300, 262],
  ['sethostname', 170, 161],
];

describe('seccomp filter bytes', () => {
  for (const arch of ['x64', 'arm64', 'riscv64'] as const satisfies readonly SeccompArch[]) {
    const program = buildSeccompFilter(arch);
    const decide = (nr: number, args: number[] = [], auditArch = auditArchOf(arch)) =>
      runSeccompFilter(program, { nr, arch: auditArch, args });
    const nr = (name: string) => {
      const found = syscallNumber(arch, name);
      if (found === undefined) throw new Error(`no ${name} on ${arch}`);
      return found;
    };

    it(`allows exactly its table on ${arch}, and nothing a server never needs`, () => {
      expect(program.length % 8).toBe(0);
      expect(program.length / 8).toBeLessThanOrEqual(4096);
      const allowed = allowedSyscallsOf(arch);
      expect(allowed.length).toBe(filterSize(arch).allowed);
      for (const number of allowed) expect(decide(number), `call ${number}`).toBe(ALLOW);
      for (const [name, x64, generic] of REFUSED) {
        const number = arch === 'x64' ? x64 : generic;
        if (number !== null) expect(decide(number), name).toBe(UNKNOWN);
      }
      // Any number nobody listed, in the gaps and past the end of the table.
      const listed = new Set(allowed);
      for (let number = 0; number < 600; number++) {
        if (!listed.has(number) && syscallNumberIsChecked(arch, number)) continue;
        if (!listed.has(number)) expect(decide(number), `call ${number}`).toBe(UNKNOWN);
      }
      // -1 has the x32 bit set on x86_64.
      expect(decide(0xffffffff)).toBe(arch === 'x64' ? SECCOMP_RET_KILL_PROCESS : UNKNOWN);
      // Another ABI's numbers mean other calls: the process is killed.
      expect(decide(nr('read'), [], 0x40000003)).toBe(SECCOMP_RET_KILL_PROCESS);
    });

    it(`allows internet and routing sockets only, on ${arch}`, () => {
      const socket = (domain: number, type: number, protocol = 0) =>
        decide(nr('socket'), [domain, type, protocol]);
      expect(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK)).toBe(ALLOW);
      expect(socket(AF_INET6, SOCK_STREAM, 6)).toBe(ALLOW);
      expect(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 17)).toBe(ALLOW);
      expect(socket(AF_INET6, SOCK_DGRAM, 58)).toBe(ALLOW);
      expect(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0)).toBe(ALLOW);
      expect(socket(AF_UNIX, SOCK_STREAM)).toBe(REFUSE);
      expect(socket(AF_UNIX, SOCK_DGRAM)).toBe(REFUSE);
      expect(socket(AF_VSOCK, SOCK_STREAM)).toBe(REFUSE);
      expect(socket(AF_PACKET, SOCK_RAW)).toBe(REFUSE);
      expect(socket(AF_INET, SOCK_RAW, 1)).toBe(REFUSE);
      expect(socket(AF_INET, SOCK_SEQPACKET, 132)).toBe(REFUSE);
      expect(socket(AF_INET, SOCK_STREAM, 132)).toBe(REFUSE);
      expect(socket(AF_NETLINK, SOCK_RAW, 9)).toBe(REFUSE);
      const pair = (domain: number, type: number) => decide(nr('socketpair'), [domain, type, 0]);
      expect(pair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC)).toBe(ALLOW);
      expect(pair(AF_UNIX, SOCK_SEQPACKET)).toBe(ALLOW);
      expect(pair(AF_UNIX, SOCK_DGRAM)).toBe(REFUSE);
      expect(pair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC)).toBe(REFUSE);
      expect(pair(AF_INET, SOCK_STREAM)).toBe(REFUSE);
    });

    it(`allows clone without new namespaces, on ${arch}`, () => {
      expect(decide(nr('clone'), [17])).toBe(ALLOW);
      expect(decide(nr('clone'), [0x3d0f00])).toBe(ALLOW);
      for (const flag of [
        0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
      ]) {
        expect(decide(nr('clone'), [flag | 17]), flag.toString(16)).toBe(REFUSE);
      }
    });

    it(`lets a parent-death signal be set to SIGKILL only, on ${arch}`, () => {
      const PR_SET_NAME = 15;
      expect(decide(nr('prctl'), [PR_SET_PDEATHSIG, 9])).toBe(ALLOW);
      expect(decide(nr('prctl'), [PR_SET_PDEATHSIG, 0])).toBe(REFUSE);
      expect(decide(nr('prctl'), [PR_SET_PDEATHSIG, 15])).toBe(REFUSE);
      expect(decide(nr('prctl'), [PR_SET_NAME, 0])).toBe(ALLOW);
    });

    it(`refuses set-id modes, on ${arch}`, () => {
      const modeCalls: [string, number][] = [
        ['fchmod', 1],
        ['fchmodat', 2],
        ['fchmodat2', 2],
        ['mknodat', 2],
      ];
      if (arch === 'x64') modeCalls.push(['chmod', 1], ['creat', 1], ['mknod', 1]);
      for (const [name, index] of modeCalls) {
        const args = (mode: number) => Array.from({ length: 4 }, (_, i) => (i === index ? mode : 3));
        expect(decide(nr(name), args(0o755)), name).toBe(ALLOW);
        expect(decide(nr(name), args(0o1777)), name).toBe(ALLOW);
        expect(decide(nr(name), args(0o4755)), name).toBe(REFUSE);
        expect(decide(nr(name), args(0o2755)), name).toBe(REFUSE);
      }
      const openCalls: [string, number][] = [['openat', 2]];
      if (arch === 'x64') openCalls.push(['open', 1]);
      for (const [name, flagsIndex] of openCalls) {
        const args = (flags: number, mode: number) => {
          const list = [3, 3, 3, 3];
          list[flagsIndex] = flags;
          list[flagsIndex + 1] = mode;
          return list;
        };
        // Without O_CREAT the mode is whatever the register held: it does not count.
        expect(decide(nr(name), args(0, 0o4755)), name).toBe(ALLOW);
        expect(decide(nr(name), args(O_WRONLY | O_CREAT, 0o644)), name).toBe(ALLOW);
        expect(decide(nr(name), args(O_WRONLY | O_CREAT, 0o4755)), name).toBe(REFUSE);
        expect(decide(nr(name), args(O_WRONLY | O_TMPFILE, 0o2755)), name).toBe(REFUSE);
      }
    });
  }

  it('kills x32 system calls on x86_64, which would dodge the numbers', () => {
    const program = buildSeccompFilter('x64');
    const decision = runSeccompFilter(program, { nr: 0x40000000 | 0, arch: auditArchOf('x64') });
    expect(decision).toBe(SECCOMP_RET_KILL_PROCESS);
  });
});

/** True when `number` is one of the calls allowed with checked arguments on `arch`. */
function syscallNumberIsChecked(arch: SeccompArch, number: number): boolean {
  const checked = [
    'socket',
    'socketpair',
    'clone',
    'chmod',
    'fchmod',
    'fchmodat',
    'fchmodat2',
    'creat',
    'mknod',
    'mknodat',
    'prctl',
    'open',
    'openat',
  ];
  return checked.some((name) => syscallNumber(arch, name) === number);
}

// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, create) on this machine's table.
const KEYCTL = process.arch === 'x64' ? 250 : 219;

// perl is part of every Debian-like base system and can make raw system calls.
const PROBE = String.raw`
socket(my $u, 1, 1, 0) ? print "unix:ok\n" : print "unix:$!\n";
socket(my $i, 2, 1, 0) ? print "inet:ok\n" : print "inet:$!\n";
my $params = "\0" x 120;
my $fd = syscall(425, 4, $params);
print $fd >= 0 ? "io_uring:ok\n" : "io_uring:$!\n";
my $keyring = syscall(${KEYCTL}, 0, -3, 1);
print $keyring >= 0 ? "keyctl:ok\n" : "keyctl:$!\n";
`;

describe('seccomp filter in a real sandbox', () => {
  it('refuses AF_UNIX sockets, io_uring and the keyring under local; the same calls work under none', async () => {
    const local = await createLocalBackend().create({ sessionId: 's', env: {}, ttlMs: 30_000 });
    const none = await createNoneBackend().create({ sessionId: 's', env: {}, ttlMs: 30_000 });
    try {
      const inside = await run(local, ['perl', '-e', PROBE]);
      expect(inside.stdout).toBe(
        'unix:Operation not permitted\ninet:ok\nio_uring:Function not implemented\nkeyctl:Function not implemented\n',
      );
      const outside = await run(none, ['perl', '-e', PROBE]);
      expect(outside.stdout).toContain('unix:ok\n');
      expect(outside.stdout).toContain('inet:ok\n');
      // io_uring works outside unless the kernel itself disables it (kernel.io_uring_disabled).
      if (ioUringEnabledOnHost()) expect(outside.stdout).toContain('io_uring:ok\n');
      // The session keyring the bridge inherited is reachable without the filter.
      expect(outside.stdout).toContain('keyctl:ok\n');
    } finally {
      await Promise.all([local.close(), none.close()]);
    }
  });
});

function ioUringEnabledOnHost(): boolean {
  try {
    return readFileSync('/proc/sys/kernel/io_uring_disabled', 'utf8').trim() === '0';
  } catch {
    return true;
  }
}
