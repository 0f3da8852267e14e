/**
 * The seccomp layer this backend adds on Linux under srt's own filter (which refuses unix
 * sockets only): no set-id bits and no file capabilities, the promise `local`'s allowlist keeps.
 * bwrap applies it (`--seccomp FD`) to everything it starts, srt's launcher and relays included;
 * srt's helper stacks its own filter on top. A file mode with S_ISUID or S_ISGID is refused on
 * every call that sets one (chmod family, open/creat with O_CREAT or O_TMPFILE, mknod); every
 * xattr write is refused (security.capability is an xattr, and no server needs one); io_uring,
 * which can open and set xattrs past seccomp, is refused; so is any call numbered past this
 * table, so that a new kernel's new way to set a mode is not allowed by default.
 */

const LD_ABS = 0x20;
const JEQ = 0x15;
const JGE = 0x35;
const JSET = 0x45;
const RET = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const SETID_BITS = 0o6000;
/** O_CREAT and O_TMPFILE's own bit: the opens that make a file with the given mode. */
const CREATES = 0o100 | 0o20000000;
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const argLow = (index: number) => 16 + 8 * index;

export type FilterArch = 'x64' | 'arm64';

interface ArchTable {
  readonly audit: number;
  /** x32 calls on x86_64 carry this bit: killed, as their numbers would dodge the checks. */
  readonly x32Bit?: number;
  /** Calls whose mode (argument index) may not carry set-id bits. */
  readonly mode: ReadonlyArray<readonly [number, number]>;
  /** Opens: [nr, flags index, mode index]. */
  readonly open: ReadonlyArray<readonly [number, number, number]>;
  /** Refused outright with EPERM: xattr writes, io_uring. */
  readonly refused: readonly number[];
  /** Refused with ENOSYS, so that callers fall back (openat2 hides its mode in a struct). */
  readonly missing: readonly number[];
  /** The first call number past this table. */
  readonly firstUnknown: number;
}

export const FILTER_ARCHES: Readonly<Record<FilterArch, ArchTable>> = {
  x64: {
    audit: 0xc000003e,
    x32Bit: 0x40000000,
    // chmod, fchmod, creat, mknod | fchmodat, mknodat, fchmodat2
    mode: [
      [90, 1],
      [91, 1],
      [85, 1],
      [133, 1],
      [268, 2],
      [259, 2],
      [452, 2],
    ],
    // open, openat
    open: [
      [2, 1, 2],
      [257, 2, 3],
    ],
    // setxattr, lsetxattr, fsetxattr, io_uring_setup
    refused: [188, 189, 190, 425],
    // openat2
    missing: [437],
    // setxattrat
    firstUnknown: 463,
  },
  arm64: {
    audit: 0xc00000b7,
    // fchmod | fchmodat, mknodat, fchmodat2
    mode: [
      [52, 1],
      [53, 2],
      [33, 2],
      [452, 2],
    ],
    // openat
    open: [[56, 2, 3]],
    // setxattr, lsetxattr, fsetxattr, io_uring_setup
    refused: [5, 6, 7, 425],
    missing: [437],
    firstUnknown: 463,
  },
};

export function filterArchOf(arch: string): FilterArch | undefined {
  return arch === 'x64' || arch === 'arm64' ? arch : undefined;
}

type Insn =
  | { readonly code: number; readonly k: number; readonly yes?: string; readonly no?: string }
  | { readonly label: string };

/** The filter for `arch` as `struct sock_filter[]` bytes, for `bwrap --seccomp FD`. */
export function buildSetIdFilter(arch: FilterArch): Uint8Array {
  const table = FILTER_ARCHES[arch];
  const program: Insn[] = [
    { code: LD_ABS, k: OFFSET_ARCH },
    { code: JEQ, k: table.audit, no: 'kill' },
    { code: LD_ABS, k: OFFSET_NR },
  ];
  if (table.x32Bit !== undefined) program.push({ code: JSET, k: table.x32Bit, yes: 'kill' });
  program.push({ code: JGE, k: table.firstUnknown, yes: 'enosys' });
  for (const nr of table.refused) program.push({ code: JEQ, k: nr, yes: 'eperm' });
  for (const nr of table.missing) program.push({ code: JEQ, k: nr, yes: 'enosys' });
  for (const [nr, arg] of table.mode) program.push({ code: JEQ, k: nr, yes: `mode${arg}` });
  for (const [nr, flags, mode] of table.open) program.push({ code: JEQ, k: nr, yes: `open${flags}${mode}` });
  program.push({ code: RET, k: RET_ALLOW });
  for (const arg of new Set(table.mode.map(([, arg]) => arg))) {
    program.push({ label: `mode${arg}` }, ...modeCheck(arg));
  }
  for (const [, flags, mode] of table.open) {
    program.push(
      { label: `open${flags}${mode}` },
      { code: LD_ABS, k: argLow(flags) },
      { code: JSET, k: CREATES, no: 'allow' },
      ...modeCheck(mode),
    );
  }
  program.push(
    { label: 'allow' },
    { code: RET, k: RET_ALLOW },
    { label: 'eperm' },
    { code: RET, k: RET_ERRNO | EPERM },
    { label: 'enosys' },
    { code: RET, k: RET_ERRNO | ENOSYS },
    { label: 'kill' },
    { code: RET, k: RET_KILL_PROCESS },
  );
  return assemble(program);
}

function modeCheck(arg: number): Insn[] {
  return [
    { code: LD_ABS, k: argLow(arg) },
    { code: JSET, k: SETID_BITS, yes: 'eperm' },
    { code: RET, k: RET_ALLOW },
  ];
}

/** Resolves labels to forward offsets (a conditional jump falls through where no target is named). */
function assemble(program: readonly Insn[]): Uint8Array {
  const at = new Map<string, number>();
  let count = 0;
  for (const insn of program) {
    if ('label' in insn) at.set(insn.label, count);
    else count++;
  }
  const out = Buffer.alloc(count * 8);
  let index = 0;
  for (const insn of program) {
    if ('label' in insn) continue;
    const offset = (label: string | undefined) => {
      if (label === undefined) return 0;
      const target = at.get(label);
      const jump = target === undefined ? -1 : target - index - 1;
      if (jump < 0 || jump > 255) throw new Error(`bad jump to ${label}`);
      return jump;
    };
    out.writeUInt16LE(insn.code, index * 8);
    out.writeUInt8(offset(insn.yes), index * 8 + 2);
    out.writeUInt8(offset(insn.no), index * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, index * 8 + 4);
    index++;
  }
  return new Uint8Array(out);
}
