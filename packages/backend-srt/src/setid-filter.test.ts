import { describe, expect, it } from 'vitest';
import { buildSetIdFilter, FILTER_ARCHES, type FilterArch } from './setid-filter.js';

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const ENOSYS = 0x00050026;
const KILL = 0x80000000;

/** Runs the classic BPF program on one system call, as the kernel would. */
function decide(filter: Uint8Array, arch: number, nr: number, args: readonly number[] = []): number {
  const view = Buffer.from(filter);
  const data = Buffer.alloc(64);
  data.writeUInt32LE(nr >>> 0, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  for (const [i, arg] of args.entries()) data.writeUInt32LE(arg >>> 0, 16 + 8 * i);
  let acc = 0;
  for (let pc = 0; pc * 8 < view.length; pc++) {
    const code = view.readUInt16LE(pc * 8);
    const jt = view.readUInt8(pc * 8 + 2);
    const jf = view.readUInt8(pc * 8 + 3);
    const k = view.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) acc = data.readUInt32LE(k);
    else if (code === 0x06) return k;
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x35) pc += acc >= k ? jt : jf;
    else if (code === 0x45) pc += (acc & k) !== 0 ? jt : jf;
    else throw new Error(`unknown instruction ${code}`);
  }
  throw new Error('fell off the end');
}

const CALLS: Record<FilterArch, Record<string, number>> = {
  x64: {
    read: 0,
    chmod: 90,
    fchmodat: 268,
    openat: 257,
    open: 2,
    mknod: 133,
    fsetxattr: 190,
    io_uring_setup: 425,
  },
  arm64: {
    read: 63,
    chmod: 52,
    fchmodat: 53,
    openat: 56,
    open: 56,
    mknod: 33,
    fsetxattr: 7,
    io_uring_setup: 425,
  },
};

describe.each(['x64', 'arm64'] as const)('the set-id seccomp layer on %s', (arch) => {
  const filter = buildSetIdFilter(arch);
  const audit = FILTER_ARCHES[arch].audit;
  const nr = CALLS[arch];
  const call = (name: string, args: number[] = []) => decide(filter, audit, nr[name] as number, args);

  it('refuses set-id modes and allows plain ones', () => {
    const at = (index: number, mode: number) => Object.assign(Array(4).fill(0), { [index]: mode });
    expect(call('chmod', at(1, 0o4755))).toBe(EPERM);
    expect(call('chmod', at(1, 0o2755))).toBe(EPERM);
    expect(call('chmod', at(1, 0o755))).toBe(ALLOW);
    expect(call('fchmodat', at(2, 0o6755))).toBe(EPERM);
    expect(call('fchmodat', at(2, 0o1777))).toBe(ALLOW);
    expect(call('mknod', at(arch === 'x64' ? 1 : 2, 0o104755))).toBe(EPERM);
  });

  it('checks the mode of an open only when it creates a file', () => {
    const openat = (flags: number, mode: number) => call('openat', [0, 0, flags, mode]);
    expect(openat(0o100, 0o4755)).toBe(EPERM);
    expect(openat(0o20200000, 0o2700)).toBe(EPERM);
    expect(openat(0o100, 0o644)).toBe(ALLOW);
    // Without O_CREAT the mode argument is garbage the kernel ignores.
    expect(openat(0, 0o4755)).toBe(ALLOW);
  });

  it('refuses xattr writes and io_uring, and calls past its table', () => {
    expect(call('fsetxattr')).toBe(EPERM);
    expect(call('io_uring_setup')).toBe(EPERM);
    expect(decide(filter, audit, FILTER_ARCHES[arch].firstUnknown)).toBe(ENOSYS);
    expect(decide(filter, audit, 437)).toBe(ENOSYS);
    expect(call('read')).toBe(ALLOW);
  });

  it('kills a call of another ABI', () => {
    expect(decide(filter, 0x40000003, 0)).toBe(KILL);
    if (arch === 'x64') expect(decide(filter, audit, 0x40000000 + 90, [0, 0o4755])).toBe(KILL);
  });
});
