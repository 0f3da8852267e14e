/**
 * The system calls of the seccomp filter every sandboxed process runs under, per architecture.
 * filter/build.ts assembles them into classic BPF, so that no build needs libseccomp.
 *
 * An allowlist: a system call runs only when the table below names it; any other gets ENOSYS
 * (so that libc falls back, as it does from clone3 to clone). The table starts from Docker's
 * default profile and leaves out what an MCP server never needs: ptrace and the other ways into
 * another process (process_vm_readv/writev, pidfd_getfd, kcmp, process_madvise), personality,
 * modify_ldt and set_thread_area, the keyrings, bpf, perf_event_open, userfaultfd, io_uring
 * (which would also bypass this filter for the operations it submits), mount, namespace and
 * module calls, fanotify, name_to_handle_at, openat2 (its mode hides in memory the filter cannot
 * read) and clone3 (its flags do too).
 *
 * A few calls are allowed only with some arguments (see CHECKED): socket families and types,
 * socketpair, clone without new namespaces, and file modes without the setuid and setgid bits.
 */

/** The architectures with a known system call table here, by `process.arch`. */
export type SeccompArch = 'x64' | 'arm64' | 'riscv64';

/** [name, number on x86_64, number in the generic table of arm64 and riscv64]; null: no such call. */
type Entry = readonly [name: string, x64: number | null, generic: number | null];

/**
 * Allowed whatever their arguments. To allow a call a server needs: add it to its group with
 * both numbers (from the kernel's `arch/x86/entry/syscalls/syscall_64.tbl` and
 * `include/uapi/asm-generic/unistd.h`; calls from 424 on share one number everywhere), and add a
 * test that runs the server.
 */
const ALLOWED: readonly Entry[] = [
  // Files: open, read, write, seek, sync
  ['read', 0, 63],
  ['write', 1, 64],
  ['readv', 19, 65],
  ['writev', 20, 66],
  ['pread64', 17, 67],
  ['pwrite64', 18, 68],
  ['preadv', 295, 69],
  ['pwritev', 296, 70],
  ['preadv2', 327, 286],
  ['pwritev2', 328, 287],
  ['lseek', 8, 62],
  ['close', 3, 57],
  ['close_range', 436, 436],
  ['dup', 32, 23],
  ['dup2', 33, null],
  ['dup3', 292, 24],
  ['fcntl', 72, 25],
  ['flock', 73, 32],
  ['fsync', 74, 82],
  ['fdatasync', 75, 83],
  ['sync', 162, 81],
  ['syncfs', 306, 267],
  ['sync_file_range', 277, 84],
  ['fallocate', 285, 47],
  ['ftruncate', 77, 46],
  ['truncate', 76, 45],
  ['fadvise64', 221, 223],
  ['readahead', 187, 213],
  ['sendfile', 40, 71],
  ['copy_file_range', 326, 285],
  ['splice', 275, 76],
  ['tee', 276, 77],
  ['vmsplice', 278, 75],
  // File metadata and directories
  ['access', 21, null],
  ['faccessat', 269, 48],
  ['faccessat2', 439, 439],
  ['stat', 4, null],
  ['fstat', 5, 80],
  ['lstat', 6, null],
  ['newfstatat', 262, 79],
  ['statx', 332, 291],
  ['statfs', 137, 43],
  ['fstatfs', 138, 44],
  ['getdents', 78, null],
  ['getdents64', 217, 61],
  ['getcwd', 79, 17],
  ['chdir', 80, 49],
  ['fchdir', 81, 50],
  ['readlink', 89, null],
  ['readlinkat', 267, 78],
  ['mkdir', 83, null],
  ['mkdirat', 258, 34],
  ['rmdir', 84, null],
  ['rename', 82, null],
  ['renameat', 264, 38],
  ['renameat2', 316, 276],
  ['link', 86, null],
  ['linkat', 265, 37],
  ['symlink', 88, null],
  ['symlinkat', 266, 36],
  ['unlink', 87, null],
  ['unlinkat', 263, 35],
  ['umask', 95, 166],
  ['utime', 132, null],
  ['utimes', 235, null],
  ['utimensat', 280, 88],
  ['futimesat', 261, null],
  ['chown', 92, null],
  ['fchown', 93, 55],
  ['lchown', 94, null],
  ['fchownat', 260, 54],
  ['getxattr', 191, 8],
  ['lgetxattr', 192, 9],
  ['fgetxattr', 193, 10],
  ['listxattr', 194, 11],
  ['llistxattr', 195, 12],
  ['flistxattr', 196, 13],
  ['setxattr', 188, 5],
  ['lsetxattr', 189, 6],
  ['fsetxattr', 190, 7],
  ['removexattr', 197, 14],
  ['lremovexattr', 198, 15],
  ['fremovexattr', 199, 16],
  ['inotify_init', 253, null],
  ['inotify_init1', 294, 26],
  ['inotify_add_watch', 254, 27],
  ['inotify_rm_watch', 255, 28],
  // Memory
  ['brk', 12, 214],
  ['mmap', 9, 222],
  ['munmap', 11, 215],
  ['mremap', 25, 216],
  ['mprotect', 10, 226],
  ['madvise', 28, 233],
  ['mincore', 27, 232],
  ['msync', 26, 227],
  ['mlock', 149, 228],
  ['mlock2', 325, 284],
  ['munlock', 150, 229],
  ['mlockall', 151, 230],
  ['munlockall', 152, 231],
  ['membarrier', 324, 283],
  ['memfd_create', 319, 279],
  ['memfd_secret', 447, 447],
  ['pkey_alloc', 330, 289],
  ['pkey_free', 331, 290],
  ['pkey_mprotect', 329, 288],
  ['process_mrelease', 448, 448],
  ['map_shadow_stack', 453, null],
  // Processes and threads. clone is checked (CHECKED); clone3 keeps its flags in memory the
  // filter cannot read, so it gets ENOSYS and libc falls back to clone.
  ['fork', 57, null],
  ['vfork', 58, null],
  ['execve', 59, 221],
  ['execveat', 322, 281],
  ['exit', 60, 93],
  ['exit_group', 231, 94],
  ['wait4', 61, 260],
  ['waitid', 247, 95],
  ['set_tid_address', 218, 96],
  ['set_robust_list', 273, 99],
  ['get_robust_list', 274, 100],
  ['rseq', 334, 293],
  ['arch_prctl', 158, null],
  ['gettid', 186, 178],
  ['getpid', 39, 172],
  ['getppid', 110, 173],
  ['getpgid', 121, 155],
  ['getpgrp', 111, null],
  ['setpgid', 109, 154],
  ['getsid', 124, 156],
  ['setsid', 112, 157],
  ['kill', 62, 129],
  ['tkill', 200, 130],
  ['tgkill', 234, 131],
  ['pidfd_open', 434, 434],
  ['pidfd_send_signal', 424, 424],
  ['seccomp', 317, 277],
  ['landlock_create_ruleset', 444, 444],
  ['landlock_add_rule', 445, 445],
  ['landlock_restrict_self', 446, 446],
  ['capget', 125, 90],
  ['capset', 126, 91],
  // Credentials: only ever within the sandbox's own ids, which hold no capabilities
  ['getuid', 102, 174],
  ['geteuid', 107, 175],
  ['getgid', 104, 176],
  ['getegid', 108, 177],
  ['getresuid', 118, 148],
  ['getresgid', 120, 150],
  ['getgroups', 115, 158],
  ['setuid', 105, 146],
  ['setgid', 106, 144],
  ['setreuid', 113, 145],
  ['setregid', 114, 143],
  ['setresuid', 117, 147],
  ['setresgid', 119, 149],
  ['setfsuid', 122, 151],
  ['setfsgid', 123, 152],
  ['setgroups', 116, 159],
  // Signals
  ['rt_sigaction', 13, 134],
  ['rt_sigprocmask', 14, 135],
  ['rt_sigreturn', 15, 139],
  ['rt_sigpending', 127, 136],
  ['rt_sigsuspend', 130, 133],
  ['rt_sigtimedwait', 128, 137],
  ['rt_sigqueueinfo', 129, 138],
  ['rt_tgsigqueueinfo', 297, 240],
  ['sigaltstack', 131, 132],
  ['signalfd', 282, null],
  ['signalfd4', 289, 74],
  ['pause', 34, null],
  ['restart_syscall', 219, 128],
  // Waiting, polling, events and futexes
  ['futex', 202, 98],
  ['futex_waitv', 449, 449],
  ['futex_wake', 454, 454],
  ['futex_wait', 455, 455],
  ['futex_requeue', 456, 456],
  ['poll', 7, null],
  ['ppoll', 271, 73],
  ['select', 23, null],
  ['pselect6', 270, 72],
  ['epoll_create', 213, null],
  ['epoll_create1', 291, 20],
  ['epoll_ctl', 233, 21],
  ['epoll_wait', 232, null],
  ['epoll_pwait', 281, 22],
  ['epoll_pwait2', 441, 441],
  ['eventfd', 284, null],
  ['eventfd2', 290, 19],
  ['pipe', 22, null],
  ['pipe2', 293, 59],
  // Time and timers
  ['nanosleep', 35, 101],
  ['clock_nanosleep', 230, 115],
  ['clock_gettime', 228, 113],
  ['clock_getres', 229, 114],
  ['gettimeofday', 96, 169],
  ['time', 201, null],
  ['times', 100, 153],
  ['alarm', 37, null],
  ['getitimer', 36, 102],
  ['setitimer', 38, 103],
  ['timer_create', 222, 107],
  ['timer_settime', 223, 110],
  ['timer_gettime', 224, 108],
  ['timer_getoverrun', 225, 109],
  ['timer_delete', 226, 111],
  ['timerfd_create', 283, 85],
  ['timerfd_settime', 286, 86],
  ['timerfd_gettime', 287, 87],
  ['adjtimex', 159, 171],
  ['clock_adjtime', 305, 266],
  // Scheduling, limits and system information
  ['sched_yield', 24, 124],
  ['sched_getaffinity', 204, 123],
  ['sched_setaffinity', 203, 122],
  ['sched_getparam', 143, 121],
  ['sched_setparam', 142, 118],
  ['sched_getscheduler', 145, 120],
  ['sched_setscheduler', 144, 119],
  ['sched_get_priority_max', 146, 125],
  ['sched_get_priority_min', 147, 126],
  ['sched_rr_get_interval', 148, 127],
  ['sched_getattr', 315, 275],
  ['sched_setattr', 314, 274],
  ['getpriority', 140, 141],
  ['setpriority', 141, 140],
  ['ioprio_get', 252, 31],
  ['ioprio_set', 251, 30],
  ['getrlimit', 97, 163],
  ['setrlimit', 160, 164],
  ['prlimit64', 302, 261],
  ['getrusage', 98, 165],
  ['sysinfo', 99, 179],
  ['uname', 63, 160],
  ['getrandom', 318, 278],
  ['getcpu', 309, 168],
  // Sockets: socket() and socketpair() are checked (CHECKED); these act on what those made.
  ['connect', 42, 203],
  ['accept', 43, 202],
  ['accept4', 288, 242],
  ['bind', 49, 200],
  ['listen', 50, 201],
  ['shutdown', 48, 210],
  ['getsockname', 51, 204],
  ['getpeername', 52, 205],
  ['getsockopt', 55, 209],
  ['setsockopt', 54, 208],
  ['sendto', 44, 206],
  ['recvfrom', 45, 207],
  ['sendmsg', 46, 211],
  ['recvmsg', 47, 212],
  ['sendmmsg', 307, 269],
  ['recvmmsg', 299, 243],
  // Linux AIO, a small interface some databases use (io_uring is not here)
  ['io_setup', 206, 0],
  ['io_destroy', 207, 1],
  ['io_submit', 209, 2],
  ['io_cancel', 210, 3],
  ['io_getevents', 208, 4],
  ['io_pgetevents', 333, 292],
  // System V IPC, private to the sandbox's ipc namespace, and POSIX message queues
  ['shmget', 29, 194],
  ['shmat', 30, 196],
  ['shmdt', 67, 197],
  ['shmctl', 31, 195],
  ['semget', 64, 190],
  ['semop', 65, 193],
  ['semtimedop', 220, 192],
  ['semctl', 66, 191],
  ['msgget', 68, 186],
  ['msgsnd', 69, 189],
  ['msgrcv', 70, 188],
  ['msgctl', 71, 187],
  ['mq_open', 240, 180],
  ['mq_unlink', 241, 181],
  ['mq_timedsend', 242, 182],
  ['mq_timedreceive', 243, 183],
  ['mq_notify', 244, 184],
  ['mq_getsetattr', 245, 185],
  // ioctl: terminals and devices. The sandbox runs in a session of its own, with no terminal.
  ['ioctl', 16, 29],
];

/** Allowed only on riscv64: JIT compilers must flush the instruction cache there. */
const RISCV64_ONLY: readonly number[] = [258 /* riscv_hwprobe */, 259 /* riscv_flush_icache */];

export type Check =
  /** socket(): AF_INET and AF_INET6 streams (TCP) and datagrams (UDP, ping), and AF_NETLINK's
   * NETLINK_ROUTE that getifaddrs() reads. No AF_UNIX (host services on filesystem sockets),
   * no packet, raw or vsock sockets, no other protocol modules. */
  | { readonly kind: 'socket' }
  /** socketpair(): AF_UNIX streams and seqpackets only. A pair is connected to itself and
   * ignores addresses; a datagram end could sendto() any socket path the sandbox sees. */
  | { readonly kind: 'socketpair' }
  /** clone(): threads and processes, no new namespaces. */
  | { readonly kind: 'clone' }
  /** prctl(): PR_SET_PDEATHSIG only to SIGKILL. bwrap's init (pid 1) runs under this filter
   * too, and a process inside can write code into it through /proc/1/mem: it must not clear
   * the parent-death signal that ends the sandbox when the host process dies. */
  | { readonly kind: 'prctl' }
  /** A mode argument without S_ISUID or S_ISGID: no set-id file on an rw mount. */
  | { readonly kind: 'mode'; readonly arg: number }
  /** open and openat: the mode counts only when the flags create a file. */
  | { readonly kind: 'openMode'; readonly flagsArg: number; readonly modeArg: number };

export const CHECKED: readonly (readonly [
  name: string,
  x64: number | null,
  generic: number | null,
  check: Check,
])[] = [
  ['socket', 41, 198, { kind: 'socket' }],
  ['socketpair', 53, 199, { kind: 'socketpair' }],
  ['clone', 56, 220, { kind: 'clone' }],
  ['prctl', 157, 167, { kind: 'prctl' }],
  ['chmod', 90, null, { kind: 'mode', arg: 1 }],
  ['fchmod', 91, 52, { kind: 'mode', arg: 1 }],
  ['fchmodat', 268, 53, { kind: 'mode', arg: 2 }],
  ['fchmodat2', 452, 452, { kind: 'mode', arg: 2 }],
  ['creat', 85, null, { kind: 'mode', arg: 1 }],
  ['mknod', 133, null, { kind: 'mode', arg: 1 }],
  ['mknodat', 259, 33, { kind: 'mode', arg: 2 }],
  ['open', 2, null, { kind: 'openMode', flagsArg: 1, modeArg: 2 }],
  ['openat', 257, 56, { kind: 'openMode', flagsArg: 2, modeArg: 3 }],
];

interface ArchTable {
  readonly auditArch: number;
  readonly column: 1 | 2;
  readonly extra?: readonly number[];
  /** x86_64 also accepts x32 calls (number | 0x40000000), which would dodge the numbers here. */
  readonly x32Bit?: number;
}

export const ARCHES: Record<SeccompArch, ArchTable> = {
  x64: { auditArch: 0xc000003e, column: 1, x32Bit: 0x40000000 },
  arm64: { auditArch: 0xc00000b7, column: 2 },
  riscv64: { auditArch: 0xc00000f3, column: 2, extra: RISCV64_ONLY },
};

export function isSeccompArch(arch: string): arch is SeccompArch {
  return Object.hasOwn(ARCHES, arch);
}

/** The numbers allowed whatever their arguments on `arch`, sorted. */
export function allowedSyscallsOf(arch: SeccompArch): readonly number[] {
  const table = ARCHES[arch];
  const numbers = ALLOWED.map((entry) => entry[table.column]).filter((nr): nr is number => nr !== null);
  return [...new Set([...numbers, ...(table.extra ?? [])])].sort((a, b) => a - b);
}

/** The number of a call by name on `arch` (allowed, checked or not), for tests and docs. */
export function syscallNumber(arch: SeccompArch, name: string): number | undefined {
  const column = ARCHES[arch].column;
  return [...ALLOWED, ...CHECKED].find((entry) => entry[0] === name)?.[column] ?? undefined;
}

/** How many calls the filter lets through on `arch`: unconditionally, and with checked arguments. */
export function filterSize(arch: SeccompArch): { readonly allowed: number; readonly checked: number } {
  const column = ARCHES[arch].column;
  return {
    allowed: allowedSyscallsOf(arch).length,
    checked: CHECKED.filter((entry) => entry[column] !== null).length,
  };
}

export function auditArchOf(arch: SeccompArch): number {
  return ARCHES[arch].auditArch;
}
