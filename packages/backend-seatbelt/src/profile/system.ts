/**
 * What every session on macOS may read, look up and ask the kernel, whatever its grants.
 * Each list is an allowlist: anything not here is refused by `(deny default)`.
 */

/** The system runtime: frameworks, libraries, the dyld shared cache and the stock tools. */
export const SYSTEM_READ_ROOTS: readonly string[] = [
  '/System/Library',
  '/System/Cryptexes',
  // The dyld shared cache and its cryptex live here on macOS 13 and later.
  '/System/Volumes/Preboot/Cryptexes',
  '/usr/lib',
  '/usr/share',
  '/usr/bin',
  '/bin',
  '/usr/libexec',
  // Older dyld caches, and `/bin/sh`'s choice of shell.
  '/private/var/db/dyld',
  '/private/var/select',
  // Time zones: /etc/localtime and /usr/share/zoneinfo point here.
  '/private/var/db/timezone',
  // Rosetta's runtime, for an x86_64 node on Apple silicon.
  '/Library/Apple/usr/libexec/oah',
  // /usr/bin/python3 and git are shims that run the Command Line Tools' copies (Apple's, no user data).
  '/Library/Developer/CommandLineTools/usr',
  '/Library/Developer/CommandLineTools/Library/Frameworks',
];

/** Single files under /private/etc that a resolver, TLS and libc read. */
export const SYSTEM_READ_FILES: readonly string[] = [
  '/private/etc/hosts',
  '/private/etc/services',
  '/private/etc/protocols',
  '/private/etc/localtime',
  '/private/etc/ssl/cert.pem',
  '/private/etc/ssl/openssl.cnf',
  '/private/var/run/resolv.conf',
  // Which developer directory the /usr/bin shims use.
  '/private/var/db/xcode_select_link',
];

/** Devices a server reads and writes as data (never a terminal, disk or packet filter). */
export const DEVICE_FILES: readonly string[] = [
  '/dev/null',
  '/dev/zero',
  '/dev/random',
  '/dev/urandom',
  // dyld opens it at start for DTrace probes; refusing it only logs noise.
  '/dev/dtracehelper',
];

/** `/dev/fd/N` and `/dev/stdin|stdout|stderr` are the process's own descriptors. */
export const OWN_FD_PATHS: readonly string[] = ['/dev/fd', '/dev/stdin', '/dev/stdout', '/dev/stderr'];

export interface Allowed {
  readonly name: string;
  readonly why: string;
}

/** Mach services a Node or Python server needs; nothing that acts for it on the host. */
export const MACH_ALLOWLIST: readonly Allowed[] = [
  {
    name: 'com.apple.system.opendirectoryd.libinfo',
    why: 'getpwuid/getgrgid: os.userInfo() in Node, pwd and getpass in Python, npm resolving ~',
  },
  {
    name: 'com.apple.system.notification_center',
    why: 'libnotify, which libc uses to learn of time zone and resolver changes',
  },
  { name: 'com.apple.logd', why: 'os_log from libSystem and libdispatch (crash and fault messages)' },
];

/** POSIX shared memory only libnotify reads (read-only); POSIX semaphores for Python's multiprocessing. */
export const SHM_READ_NAMES: readonly string[] = ['apple.shm.notification_center'];
export const SEM_NAME_PREFIXES: readonly Allowed[] = [
  { name: '/mp-', why: "Python multiprocessing's locks (sem_open names start /mp-)" },
];

/** sysctls libuv, V8, OpenSSL and CPython read for CPU, memory and OS facts. No kern.proc.*. */
export const SYSCTL_NAMES: readonly string[] = [
  'hw.activecpu',
  'hw.byteorder',
  'hw.cachelinesize',
  'hw.cpufamily',
  'hw.cpufrequency',
  'hw.cputype',
  'hw.l1dcachesize',
  'hw.l2cachesize',
  'hw.logicalcpu',
  'hw.logicalcpu_max',
  'hw.machine',
  'hw.memsize',
  'hw.model',
  'hw.ncpu',
  'hw.nperflevels',
  'hw.pagesize',
  'hw.physicalcpu',
  'hw.physicalcpu_max',
  'hw.tbfrequency',
  'kern.argmax',
  'kern.boottime',
  'kern.hostname',
  'kern.maxfiles',
  'kern.maxfilesperproc',
  'kern.osproductversion',
  'kern.osrelease',
  'kern.ostype',
  'kern.osvariant_status',
  'kern.osversion',
  'kern.secure_kernel',
  'kern.usrstack64',
  'kern.version',
  'machdep.ptrauth_enabled',
  'sysctl.proc_cputype',
  'vm.loadavg',
];
export const SYSCTL_PREFIXES: readonly string[] = ['hw.optional.', 'hw.perflevel', 'machdep.cpu.'];

/**
 * Names in a writable mount that stay read-only: code another program runs later with the
 * user's rights (git hooks and config, shell startup files, editor and agent settings, npm's
 * config), at any depth (a nested repository's hooks too). Regexes on the path below the mount.
 */
export const PROTECTED_IN_MOUNTS: readonly string[] = [
  // The directories that hold them, as entries: neither removed, renamed nor created (a
  // prepared directory renamed to `.git` would bring hooks and a config of the sandbox's choice).
  '\\.(git|claude)$',
  '\\.git/hooks(/.*)?$',
  '\\.git/config$',
  '\\.gitconfig$',
  '\\.gitmodules$',
  '\\.(bashrc|bash_profile|bash_login|zshrc|zprofile|zshenv|zlogin|profile)$',
  '\\.npmrc$',
  '\\.mcp\\.json$',
  '\\.(vscode|idea)(/.*)?$',
  '\\.claude/(commands|agents|settings[^/]*)(/.*)?$',
];

/**
 * Denied last, whatever was granted: the firmlink spelling of the data volume (a second name
 * for /Users, /Library, /opt, /private), other terminals (/dev/tty covers ttys* and ttyp*), packet filters and raw disks.
 */
export const FINAL_DENY_SUBPATHS: readonly string[] = ['/System/Volumes/Data'];
export const FINAL_DENY_PREFIXES: readonly string[] = ['/dev/tty', '/dev/pty', '/dev/bpf'];
export const FINAL_DENY_REGEXES: readonly string[] = ['^/dev/[^/]*disk'];
