/** Kernel constants the filter checks arguments against, and the return values it gives. */

export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const AF_PACKET = 17;
export const AF_VSOCK = 40;
export const SOCK_STREAM = 1;
export const SOCK_DGRAM = 2;
export const SOCK_RAW = 3;
export const SOCK_SEQPACKET = 5;
export const SOCK_TYPE_MASK = 0xf;
export const IPPROTO_ICMP = 1;
export const IPPROTO_TCP = 6;
export const IPPROTO_UDP = 17;
export const IPPROTO_ICMPV6 = 58;
export const NETLINK_ROUTE = 0;
/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET. */
export const CLONE_NAMESPACES = 0x7e020000;
export const PR_SET_PDEATHSIG = 1;
export const SIGKILL = 9;
export const S_ISUID = 0o4000;
export const S_ISGID = 0o2000;
/** O_CREAT and __O_TMPFILE, the same on every architecture here. */
export const O_CREATES = 0o100 | 0o20000000;

export const EPERM = 1;
export const ENOSYS = 38;

export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
