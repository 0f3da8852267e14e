/**
 * The seccomp filter every sandboxed process runs under, as classic BPF bytes for
 * `bwrap --seccomp FD`. Assembled here so that no build needs libseccomp.
 *
 * It refuses: new AF_UNIX sockets (host services listening on filesystem sockets that a
 * read-only view still exposes), AF_VSOCK sockets (the hypervisor's side channel), io_uring
 * (a large kernel surface that also bypasses this filter for the operations it submits), the
 * kernel keyring calls (the inherited session keyring can hold the user's tickets and keys),
 * and perf_event_open, bpf and userfaultfd (kernel surface that servers do not need).
 * socketpair() stays allowed: runtimes use it for their own pipes and it reaches nothing.
 */

/** The architectures with a known system call table here, by `process.arch`. */
export type SeccompArch = 'x64' | 'arm64' | 'riscv64';

interface ArchTable {
  readonly auditArch: number;
  readonly socket: number;
  /** add_key, request_key, keyctl, perf_event_open, bpf, userfaultfd. */
  readonly refused: readonly number[];
  /** x86_64 also accepts x32 calls (number | 0x40000000), which would dodge the numbers below. */
  readonly x32Bit?: number;
}

// arm64 and riscv64 share the generic system call table.
const GENERIC_REFUSED = [217, 218, 219, 241, 280, 282];

const ARCHES: Record<SeccompArch, ArchTable> = {
  x64: { auditArch: 0xc000003e, socket: 41, refused: [248, 249, 250, 298, 321, 323], x32Bit: 0x40000000 },
  arm64: { auditArch: 0xc00000b7, socket: 198, refused: GENERIC_REFUSED },
  riscv64: { auditArch: 0xc00000f3, socket: 198, refused: GENERIC_REFUSED },
};

// io_uring_setup, io_uring_enter, io_uring_register share these numbers on every arch above.
const IO_URING = [425, 426, 427] as const;

export const AF_UNIX = 1;
export const AF_VSOCK = 40;
export const EPERM = 1;
export const ENOSYS = 38;

export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;

// Offsets into struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; } (little-endian).
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;

export function isSeccompArch(arch: string): arch is SeccompArch {
  return Object.hasOwn(ARCHES, arch);
}

type Step =
  | { readonly op: 'load'; readonly offset: number }
  | { readonly op: 'jeq' | 'jset'; readonly k: number; readonly yes: string; readonly no?: string }
  | { readonly op: 'ret'; readonly k: number }
  | { readonly op: 'label'; readonly name: string };

/** Returns the filter for `arch` as `struct sock_filter[]` bytes. */
export function buildSeccompFilter(arch: SeccompArch): Uint8Array {
  const table = ARCHES[arch];
  const steps: Step[] = [
    // A process of another ABI (i386 on x86_64, say) would use other numbers: kill it.
    { op: 'load', offset: OFFSET_ARCH },
    { op: 'jeq', k: table.auditArch, yes: 'native', no: 'kill' },
    { op: 'label', name: 'native' },
    { op: 'load', offset: OFFSET_NR },
  ];
  if (table.x32Bit !== undefined) steps.push({ op: 'jset', k: table.x32Bit, yes: 'kill' });
  steps.push({ op: 'jeq', k: table.socket, yes: 'socket' });
  for (const nr of [...IO_URING, ...table.refused]) steps.push({ op: 'jeq', k: nr, yes: 'enosys' });
  steps.push(
    { op: 'ret', k: SECCOMP_RET_ALLOW },
    { op: 'label', name: 'socket' },
    // The kernel reads the domain as an int: compare the low 32 bits only.
    { op: 'load', offset: OFFSET_ARG0_LOW },
    { op: 'jeq', k: AF_UNIX, yes: 'eperm' },
    { op: 'jeq', k: AF_VSOCK, yes: 'eperm' },
    { op: 'ret', k: SECCOMP_RET_ALLOW },
    { op: 'label', name: 'eperm' },
    { op: 'ret', k: SECCOMP_RET_ERRNO | EPERM },
    { op: 'label', name: 'enosys' },
    { op: 'ret', k: SECCOMP_RET_ERRNO | ENOSYS },
    { op: 'label', name: 'kill' },
    { op: 'ret', k: SECCOMP_RET_KILL_PROCESS },
  );
  return assemble(steps);
}

function assemble(steps: readonly Step[]): Uint8Array {
  const labels = new Map<string, number>();
  let count = 0;
  for (const step of steps) {
    if (step.op === 'label') labels.set(step.name, count);
    else count++;
  }
  const out = new Uint8Array(count * 8);
  const view = new DataView(out.buffer);
  let index = 0;
  const jump = (label: string | undefined): number => {
    if (label === undefined) return 0;
    const target = labels.get(label);
    if (target === undefined || target <= index) throw new Error(`bad seccomp label ${label}`);
    const offset = target - index - 1;
    if (offset > 255) throw new Error('seccomp jump too far');
    return offset;
  };
  for (const step of steps) {
    if (step.op === 'label') continue;
    let code: number;
    let jt = 0;
    let jf = 0;
    let k: number;
    if (step.op === 'load') {
      code = BPF_LD_W_ABS;
      k = step.offset;
    } else if (step.op === 'ret') {
      code = BPF_RET_K;
      k = step.k;
    } else {
      code = step.op === 'jeq' ? BPF_JEQ_K : BPF_JSET_K;
      jt = jump(step.yes);
      jf = jump(step.no);
      k = step.k;
    }
    const at = index * 8;
    view.setUint16(at, code, true);
    view.setUint8(at + 2, jt);
    view.setUint8(at + 3, jf);
    view.setUint32(at + 4, k >>> 0, true);
    index++;
  }
  return out;
}

/** What the filter decides for one call; a small interpreter of the same bytes, for tests. */
export function runSeccompFilter(
  program: Uint8Array,
  data: { readonly nr: number; readonly arch: number; readonly arg0?: number },
): number {
  const view = new DataView(program.buffer, program.byteOffset, program.byteLength);
  const input = new DataView(new ArrayBuffer(64));
  input.setInt32(OFFSET_NR, data.nr, true);
  input.setUint32(OFFSET_ARCH, data.arch >>> 0, true);
  input.setUint32(OFFSET_ARG0_LOW, (data.arg0 ?? 0) >>> 0, true);
  let a = 0;
  for (let pc = 0; pc * 8 < program.length; pc++) {
    const code = view.getUint16(pc * 8, true);
    const jt = view.getUint8(pc * 8 + 2);
    const jf = view.getUint8(pc * 8 + 3);
    const k = view.getUint32(pc * 8 + 4, true);
    if (code === BPF_LD_W_ABS) a = input.getUint32(k, true);
    else if (code === BPF_RET_K) return k;
    else if (code === BPF_JEQ_K) pc += a === k ? jt : jf;
    else if (code === BPF_JSET_K) pc += (a & k) !== 0 ? jt : jf;
    else throw new Error(`unknown BPF opcode ${code}`);
  }
  throw new Error('BPF program fell off its end');
}

export function auditArchOf(arch: SeccompArch): number {
  return ARCHES[arch].auditArch;
}

export function refusedSyscallsOf(arch: SeccompArch): readonly number[] {
  return ARCHES[arch].refused;
}

export function socketSyscallOf(arch: SeccompArch): number {
  return ARCHES[arch].socket;
}
