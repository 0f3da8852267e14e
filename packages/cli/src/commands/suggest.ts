import { grantFlagValue, parseHost, type TraceRecord } from '@mcpsandbox/core';

/**
 * The `--allow-net` flags that would have let every refused attempt in a trace through: one per
 * host, or per `host:port` for ports other than 80 and 443, in the order first refused. Records
 * are `egress-denied` (a refused lookup or connection) and proxy decisions refused as not
 * granted. A trace is read back from a file the sandbox's names went into: each host is parsed
 * again as a host name or IP literal, and the flag is built from that value only. Anything else
 * (a refusal recorded as an invalid name, a host that does not parse) is counted in `skipped`.
 * Then the `--mount` flags for files a macOS Seatbelt profile refused (see suggestMounts).
 */
export function suggestGrants(records: readonly TraceRecord[]): { grants: string[]; skipped: number } {
  const grants: string[] = [];
  const seen = new Set<string>();
  let skipped = 0;
  for (const record of records) {
    const denied =
      record.type === 'sandbox.egress-denied' ||
      (record.type === 'sandbox.proxy' && record.decision === 'deny' && record.reason === 'not granted');
    if (!denied) continue;
    const host = typeof record.host === 'string' ? parseHost(record.host) : undefined;
    if (host === undefined) {
      skipped++;
      continue;
    }
    const port = typeof record.port === 'number' && Number.isInteger(record.port) ? record.port : undefined;
    const grant = grantFlagValue(host, port);
    if (seen.has(grant)) continue;
    seen.add(grant);
    grants.push(grant);
  }
  const mounts = suggestMounts(records);
  return {
    grants: [...grants.map((grant) => `--allow-net ${grant}`), ...mounts.flags],
    skipped: skipped + mounts.skipped,
  };
}

/** Paths printed as they are in a suggested flag; others single-quoted, or no flag at all. */
const PLAIN = /^\/[A-Za-z0-9._/@+,=~-]*$/;
const QUOTABLE = /^\/[\p{L}\p{N} ._/@+,=~()&-]*$/u;
/** Never shown, whatever is mounted: no flag would help. */
const NEVER = /^\/(System\/Volumes\/Data(\/|$)|dev\/(tty|pty|bpf|[^/]*disk))/;
/**
 * Never written, whatever is mounted: what the macOS profile keeps read-only in rw mounts (git
 * hooks and config, shell startup files, editor and agent settings; backend-seatbelt's list). A
 * rw mount of the file itself would lift that rule, so no rw flag is suggested for them.
 */
const NEVER_WRITTEN =
  /\/(\.git|\.claude|\.git\/hooks(\/.*)?|\.git\/config|\.gitconfig|\.gitmodules|\.(bashrc|bash_profile|bash_login|zshrc|zprofile|zshenv|zlogin|profile)|\.npmrc|\.mcp\.json|\.(vscode|idea)(\/.*)?|\.claude\/(commands|agents|settings[^/]*)(\/.*)?)$/;

/**
 * The `--mount` flags that would have shown each file a macOS Seatbelt profile refused
 * (`seatbelt-denial` records): read-only for reads, rw for writes. The path is the sandbox's
 * choice: only an absolute, normal path of plain characters becomes a flag.
 */
function suggestMounts(records: readonly TraceRecord[]): { flags: string[]; skipped: number } {
  const flags: string[] = [];
  let skipped = 0;
  for (const record of records) {
    if (
      record.type !== 'sandbox.seatbelt-denial' ||
      typeof record.op !== 'string' ||
      !record.op.startsWith('file-')
    )
      continue;
    const path = record.target;
    const normal =
      typeof path === 'string' &&
      path.startsWith('/') &&
      !path
        .split('/')
        .slice(1)
        .some((p) => p === '' || p === '.' || p === '..');
    const write = !record.op.startsWith('file-read');
    if (
      !normal ||
      NEVER.test(path) ||
      (write && NEVER_WRITTEN.test(path)) ||
      !(PLAIN.test(path) || QUOTABLE.test(path))
    ) {
      skipped++;
      continue;
    }
    const spec = `${path}:${path}:${write ? 'rw' : 'ro'}`;
    const flag = PLAIN.test(path) ? `--mount ${spec}` : `--mount '${spec}'`;
    if (!flags.includes(flag)) flags.push(flag);
  }
  return { flags, skipped };
}
