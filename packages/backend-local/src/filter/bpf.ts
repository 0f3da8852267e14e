/** Classic BPF: the steps the filter builder emits, their assembler into `struct sock_filter[]`
 * bytes, and a small interpreter of those bytes for tests. */

// Offsets into struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; } (little-endian).
// Every argument checked here is an int or smaller for the kernel: the low 32 bits decide.
export const OFFSET_NR = 0;
export const OFFSET_ARCH = 4;
export const argLow = (index: number) => 16 + 8 * index;

const BPF_LD_W_ABS = 0x20;
const BPF_ALU_AND_K = 0x54;
const BPF_JA = 0x05;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;

export type Step =
  | { readonly op: 'load'; readonly offset: number }
  | { readonly op: 'and'; readonly k: number }
  | { readonly op: 'jeq' | 'jge' | 'jset'; readonly k: number; readonly yes: string; readonly no?: string }
  | { readonly op: 'ja'; readonly to: string }
  | { readonly op: 'ret'; readonly k: number }
  | { readonly op: 'label'; readonly name: string };

export function assemble(steps: readonly Step[]): Uint8Array {
  const labels = new Map<string, number>();
  let count = 0;
  for (const step of steps) {
    if (step.op === 'label') {
      if (labels.has(step.name)) throw new Error(`duplicate seccomp label ${step.name}`);
      labels.set(step.name, count);
    } else count++;
  }
  // The kernel takes at most 4096 instructions (BPF_MAXINSNS).
  if (count > 4096) throw new Error('seccomp filter too long');
  const out = new Uint8Array(count * 8);
  const view = new DataView(out.buffer);
  let index = 0;
  const offsetTo = (label: string): number => {
    const target = labels.get(label);
    if (target === undefined || target <= index) throw new Error(`bad seccomp label ${label}`);
    return target - index - 1;
  };
  const jump = (label: string | undefined): number => {
    if (label === undefined) return 0;
    const offset = offsetTo(label);
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
    } else if (step.op === 'and') {
      code = BPF_ALU_AND_K;
      k = step.k;
    } else if (step.op === 'ret') {
      code = BPF_RET_K;
      k = step.k;
    } else if (step.op === 'ja') {
      code = BPF_JA;
      k = offsetTo(step.to);
    } else {
      code = step.op === 'jeq' ? BPF_JEQ_K : step.op === 'jge' ? BPF_JGE_K : BPF_JSET_K;
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
  data: { readonly nr: number; readonly arch: number; readonly args?: readonly number[] },
): number {
  const view = new DataView(program.buffer, program.byteOffset, program.byteLength);
  const input = new DataView(new ArrayBuffer(64));
  input.setInt32(OFFSET_NR, data.nr, true);
  input.setUint32(OFFSET_ARCH, data.arch >>> 0, true);
  (data.args ?? []).forEach((arg, index) => {
    input.setUint32(argLow(index), arg >>> 0, true);
  });
  let a = 0;
  for (let pc = 0; pc * 8 < program.length; pc++) {
    const code = view.getUint16(pc * 8, true);
    const jt = view.getUint8(pc * 8 + 2);
    const jf = view.getUint8(pc * 8 + 3);
    const k = view.getUint32(pc * 8 + 4, true);
    if (code === BPF_LD_W_ABS) a = input.getUint32(k, true);
    else if (code === BPF_ALU_AND_K) a = (a & k) >>> 0;
    else if (code === BPF_RET_K) return k;
    else if (code === BPF_JA) pc += k;
    else if (code === BPF_JEQ_K) pc += a === k ? jt : jf;
    else if (code === BPF_JGE_K) pc += a >= k ? jt : jf;
    else if (code === BPF_JSET_K) pc += (a & k) !== 0 ? jt : jf;
    else throw new Error(`unknown BPF opcode ${code}`);
  }
  throw new Error('BPF program fell off its end');
}
