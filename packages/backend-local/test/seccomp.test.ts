import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createLocalBackend, createNoneBackend } from '../src/index.js';
import {
  AF_UNIX,
  AF_VSOCK,
  auditArchOf,
  buildSeccompFilter,
  ENOSYS,
  EPERM,
  refusedSyscallsOf,
  runSeccompFilter,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  type SeccompArch,
  socketSyscallOf,
} from '../src/seccomp.js';
import { run } from './helpers.js';

const AF_INET = 2;
const AF_INET6 = 10;

describe('seccomp filter bytes', () => {
  for (const arch of ['x64', 'arm64', 'riscv64'] as const satisfies readonly SeccompArch[]) {
    it(`decides as intended on ${arch}`, () => {
      const program = buildSeccompFilter(arch);
      expect(program.length % 8).toBe(0);
      const native = auditArchOf(arch);
      const socket = socketSyscallOf(arch);
      const decide = (nr: number, arg0 = 0, auditArch = native) =>
        runSeccompFilter(program, { nr, arch: auditArch, arg0 });
      expect(decide(socket, AF_UNIX)).toBe(SECCOMP_RET_ERRNO | EPERM);
      expect(decide(socket, AF_VSOCK)).toBe(SECCOMP_RET_ERRNO | EPERM);
      expect(decide(socket, AF_INET)).toBe(SECCOMP_RET_ALLOW);
      expect(decide(socket, AF_INET6)).toBe(SECCOMP_RET_ALLOW);
      for (const nr of [425, 426, 427, ...refusedSyscallsOf(arch)]) {
        expect(decide(nr)).toBe(SECCOMP_RET_ERRNO | ENOSYS);
      }
      expect(decide(0)).toBe(SECCOMP_RET_ALLOW);
      expect(decide(socket, AF_UNIX, 0x40000003)).toBe(SECCOMP_RET_KILL_PROCESS);
    });
  }

  it('kills x32 system calls on x86_64, which would dodge the numbers', () => {
    const program = buildSeccompFilter('x64');
    const decision = runSeccompFilter(program, {
      nr: 0x40000000 | 41,
      arch: auditArchOf('x64'),
      arg0: AF_UNIX,
    });
    expect(decision).toBe(SECCOMP_RET_KILL_PROCESS);
  });
});

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
