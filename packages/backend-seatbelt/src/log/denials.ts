import { escapeControls } from '@mcpsandbox/core';
import { TAG_PREFIX } from '../profile/generate.js';
import { checkTag } from '../profile/plan.js';
import { PROTECTED_IN_MOUNTS } from '../profile/system.js';

/** One Seatbelt refusal of this session, as the kernel logged it. */
export interface Denial {
  /** The process name and pid the kernel gave (the sandbox chose the name). */
  readonly process: string;
  readonly pid: number;
  /** The operation: `file-read-data`, `mach-lookup`, `network-outbound`… */
  readonly op: string;
  /** The path, service or address; attacker-chosen text, never printed as it is. */
  readonly target: string;
}

/** Longest ndjson line read; longer ones (no denial is) are skipped, not buffered. */
export const MAX_LOG_LINE = 64 * 1024;

/** `log stream` arguments that show only this session's denials (the profile tags each one). */
export function logStreamArgs(tag: string): string[] {
  return [
    'stream',
    '--style',
    'ndjson',
    '--predicate',
    `eventMessage ENDSWITH "${TAG_PREFIX}${checkTag(tag)}"`,
  ];
}

const VIOLATION = /^Sandbox: (.{1,128}?)\((\d{1,10})\) deny\(\d+\) ([a-z][a-z0-9*-]{0,63})(?: (.*))?$/s;

/**
 * The denial in one line of `log stream --style ndjson`, or undefined when the line is not one
 * of this session's: the event's message is the kernel's `Sandbox: name(pid) deny(n) op target`
 * and, on its last line, the profile's message, which must be this session's tag exactly.
 */
export function parseDenialLine(line: string, tag: string): Denial | undefined {
  if (line.length > MAX_LOG_LINE) return undefined;
  let event: unknown;
  try {
    event = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof event !== 'object' || event === null) return undefined;
  const message = (event as { eventMessage?: unknown }).eventMessage;
  if (typeof message !== 'string') return undefined;
  const cut = message.lastIndexOf('\n');
  if (cut < 0 || message.slice(cut + 1).trim() !== TAG_PREFIX + tag) return undefined;
  const match = VIOLATION.exec(message.slice(0, cut).trim());
  if (!match) return undefined;
  const [, process, pid, op, target] = match as unknown as [
    string,
    string,
    string,
    string,
    string | undefined,
  ];
  return { process, pid: Number(pid), op, target: target ?? '' };
}

/** Paths printed as they are in a suggested flag; others single-quoted, or no flag at all. */
const PLAIN = /^\/[A-Za-z0-9._/@+,=~-]*$/;
const QUOTABLE = /^\/[\p{L}\p{N} ._/@+,=~()&-]*$/u;

function mountFlag(path: string, mode: 'ro' | 'rw'): string | undefined {
  if (PLAIN.test(path)) return `--mount ${path}:${path}:${mode}`;
  return QUOTABLE.test(path) ? `--mount '${path}:${path}:${mode}'` : undefined;
}

const PROTECTED = PROTECTED_IN_MOUNTS.map((tail) => new RegExp(`/${tail}`));

/** What would allow it: a flag built only from a validated path, or a plain statement. */
export function grantFor(denial: Denial): string {
  const { op, target } = denial;
  if (op.startsWith('file-')) {
    const mode = op.startsWith('file-read') ? 'ro' : 'rw';
    if (target.startsWith('/System/Volumes/Data/')) {
      return `this is the data volume's second spelling, never shown: use the path without /System/Volumes/Data`;
    }
    if (/^\/dev\/(tty|pty|bpf|[^/]*disk)/.test(target))
      return 'terminals, packet filters and disks are never shown';
    // A write the rw-mount rules refuse (hooks, startup files…): a mount of the file itself would
    // lift that rule, so no flag is suggested.
    if (mode === 'rw' && PROTECTED.some((re) => re.test(target)))
      return 'git hooks and config, shell startup files, editor and agent settings stay read-only: no setting allows writing them';
    const flag = mountFlag(target, mode);
    return flag
      ? `to allow it: ${flag}`
      : 'the path has characters no suggested flag carries: mount its folder';
  }
  if (op === 'mach-lookup')
    return 'no setting allows other host services (see the backend README for the allowlist)';
  if (op.startsWith('network'))
    return 'only the egress proxy is reachable: grant hosts with --allow-net, and use HTTP(S)_PROXY';
  return 'no setting allows it';
}

/** The one stderr line for a denial: escaped, bounded, naming the grant that would allow it. */
export function denialLine(denial: Denial): string {
  const target = escapeControls(
    denial.target.length > 512 ? `${denial.target.slice(0, 512)}…` : denial.target,
  );
  const name = escapeControls(denial.process);
  return `macOS sandbox refused ${denial.op} ${target} (${name}, pid ${denial.pid}); ${grantFor(denial)}`;
}
