/** Builds the seccomp filter of filter/syscalls.ts as classic BPF bytes for `bwrap --seccomp FD`. */

import { argLow, assemble, OFFSET_ARCH, OFFSET_NR, type Step } from './bpf.js';
import {
  AF_INET,
  AF_INET6,
  AF_NETLINK,
  AF_UNIX,
  CLONE_NAMESPACES,
  ENOSYS,
  EPERM,
  IPPROTO_ICMP,
  IPPROTO_ICMPV6,
  IPPROTO_TCP,
  IPPROTO_UDP,
  NETLINK_ROUTE,
  O_CREATES,
  PR_SET_PDEATHSIG,
  S_ISGID,
  S_ISUID,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  SIGKILL,
  SOCK_DGRAM,
  SOCK_SEQPACKET,
  SOCK_STREAM,
  SOCK_TYPE_MASK,
} from './constants.js';
import { ARCHES, allowedSyscallsOf, CHECKED, type Check, type SeccompArch } from './syscalls.js';

const ALLOW: Step = { op: 'ret', k: SECCOMP_RET_ALLOW };
const REFUSE: Step = { op: 'ret', k: SECCOMP_RET_ERRNO | EPERM };

/** Returns the filter for `arch` as `struct sock_filter[]` bytes. */
export function buildSeccompFilter(arch: SeccompArch): Uint8Array {
  const table = ARCHES[arch];
  const kill: Step = { op: 'ret', k: SECCOMP_RET_KILL_PROCESS };
  const steps: Step[] = [
    // A process of another ABI (i386 on x86_64, say) would use other numbers: kill it.
    { op: 'load', offset: OFFSET_ARCH },
    { op: 'jeq', k: table.auditArch, yes: 'native', no: 'foreign' },
    { op: 'label', name: 'foreign' },
    kill,
    { op: 'label', name: 'native' },
    { op: 'load', offset: OFFSET_NR },
  ];
  if (table.x32Bit !== undefined) {
    steps.push({ op: 'jset', k: table.x32Bit, yes: 'x32', no: 'calls' }, { op: 'label', name: 'x32' }, kill);
    steps.push({ op: 'label', name: 'calls' });
  }
  const targets: Target[] = allowedSyscallsOf(arch).map((nr) => ({ nr }));
  for (const [, x64, generic, check] of CHECKED) {
    const nr = table.column === 1 ? x64 : generic;
    if (nr !== null) targets.push({ nr, check });
  }
  targets.sort((a, b) => a.nr - b.nr);
  let labels = 0;
  const fresh = (what: string) => `${what}${labels++}`;
  emitTree(steps, targets, fresh);
  return assemble(steps);
}

interface Target {
  readonly nr: number;
  readonly check?: Check;
}

/**
 * A binary search over the sorted numbers (the accumulator holds the call's number), with small
 * linear leaves that end in their own return, so that no jump goes far.
 */
function emitTree(steps: Step[], targets: readonly Target[], fresh: (what: string) => string): void {
  if (targets.length <= 4) {
    const hits = targets.map((target) => ({ target, label: fresh('hit') }));
    for (const { target, label } of hits) steps.push({ op: 'jeq', k: target.nr, yes: label });
    steps.push({ op: 'ret', k: SECCOMP_RET_ERRNO | ENOSYS });
    for (const { target, label } of hits) {
      steps.push({ op: 'label', name: label });
      if (target.check) emitCheck(steps, target.check, fresh);
      else steps.push(ALLOW);
    }
    return;
  }
  const middle = Math.floor(targets.length / 2);
  const high = fresh('high');
  const jump = fresh('jump');
  const low = fresh('low');
  steps.push(
    { op: 'jge', k: (targets[middle] as Target).nr, yes: jump, no: low },
    { op: 'label', name: jump },
    { op: 'ja', to: high },
    { op: 'label', name: low },
  );
  emitTree(steps, targets.slice(0, middle), fresh);
  steps.push({ op: 'label', name: high });
  emitTree(steps, targets.slice(middle), fresh);
}

function emitCheck(steps: Step[], check: Check, fresh: (what: string) => string): void {
  const allow = fresh('allow');
  const refuse = fresh('refuse');
  const oneOf = (values: readonly number[], yes: string) => {
    for (const k of values) steps.push({ op: 'jeq', k, yes });
  };
  switch (check.kind) {
    case 'socket': {
      const inet = fresh('inet');
      const netlink = fresh('netlink');
      const stream = fresh('stream');
      const dgram = fresh('dgram');
      steps.push({ op: 'load', offset: argLow(0) });
      oneOf([AF_INET, AF_INET6], inet);
      steps.push({ op: 'jeq', k: AF_NETLINK, yes: netlink }, { op: 'ja', to: refuse });
      steps.push({ op: 'label', name: inet }, { op: 'load', offset: argLow(1) });
      steps.push({ op: 'and', k: SOCK_TYPE_MASK });
      steps.push({ op: 'jeq', k: SOCK_STREAM, yes: stream }, { op: 'jeq', k: SOCK_DGRAM, yes: dgram });
      steps.push({ op: 'ja', to: refuse });
      steps.push({ op: 'label', name: stream }, { op: 'load', offset: argLow(2) });
      oneOf([0, IPPROTO_TCP], allow);
      steps.push({ op: 'ja', to: refuse });
      steps.push({ op: 'label', name: dgram }, { op: 'load', offset: argLow(2) });
      oneOf([0, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6], allow);
      steps.push({ op: 'ja', to: refuse });
      steps.push({ op: 'label', name: netlink }, { op: 'load', offset: argLow(2) });
      oneOf([NETLINK_ROUTE], allow);
      steps.push({ op: 'ja', to: refuse });
      break;
    }
    case 'socketpair': {
      const unix = fresh('unix');
      steps.push({ op: 'load', offset: argLow(0) }, { op: 'jeq', k: AF_UNIX, yes: unix, no: refuse });
      steps.push({ op: 'label', name: unix }, { op: 'load', offset: argLow(1) });
      steps.push({ op: 'and', k: SOCK_TYPE_MASK });
      oneOf([SOCK_STREAM, SOCK_SEQPACKET], allow);
      steps.push({ op: 'ja', to: refuse });
      break;
    }
    case 'clone':
      steps.push({ op: 'load', offset: argLow(0) }, { op: 'jset', k: CLONE_NAMESPACES, yes: refuse });
      steps.push({ op: 'ja', to: allow });
      break;
    case 'prctl': {
      const pdeathsig = fresh('pdeathsig');
      steps.push(
        { op: 'load', offset: argLow(0) },
        { op: 'jeq', k: PR_SET_PDEATHSIG, yes: pdeathsig, no: allow },
      );
      steps.push({ op: 'label', name: pdeathsig }, { op: 'load', offset: argLow(1) });
      steps.push({ op: 'jeq', k: SIGKILL, yes: allow, no: refuse });
      break;
    }
    case 'mode':
      steps.push(
        { op: 'load', offset: argLow(check.arg) },
        { op: 'jset', k: S_ISUID | S_ISGID, yes: refuse },
      );
      steps.push({ op: 'ja', to: allow });
      break;
    case 'openMode': {
      const creates = fresh('creates');
      steps.push({ op: 'load', offset: argLow(check.flagsArg) });
      steps.push({ op: 'jset', k: O_CREATES, yes: creates, no: allow });
      steps.push({ op: 'label', name: creates }, { op: 'load', offset: argLow(check.modeArg) });
      steps.push({ op: 'jset', k: S_ISUID | S_ISGID, yes: refuse });
      steps.push({ op: 'ja', to: allow });
      break;
    }
  }
  steps.push({ op: 'label', name: allow }, ALLOW, { op: 'label', name: refuse }, REFUSE);
}
