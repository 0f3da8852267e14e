import { grantFlagValue, parseHost, type TraceRecord } from '@mcpsandbox/core';

/**
 * The `--allow-net` flags that would have let every refused attempt in a trace through: one per
 * host, or per `host:port` for ports other than 80 and 443, in the order first refused. Records
 * are `egress-denied` (a refused lookup or connection) and proxy decisions refused as not
 * granted. A trace is read back from a file the sandbox's names went into: each host is parsed
 * again as a host name or IP literal, and the flag is built from that value only. Anything else
 * (a refusal recorded as an invalid name, a host that does not parse) is counted in `skipped`.
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
  return { grants: grants.map((grant) => `--allow-net ${grant}`), skipped };
}
