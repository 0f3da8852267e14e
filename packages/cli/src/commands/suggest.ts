import type { TraceRecord } from '@mcpsandbox/core';

/** A host as it may be printed: a plain name or an IP literal, nothing a terminal interprets. */
const HOST = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;
const IPV6 = /^[0-9a-f:.]{2,45}$/;

/**
 * The `--allow-net` flags that would have let every refused attempt in a trace through: one per
 * host, or per `host:port` for ports other than 80 and 443, in the order first refused. Records
 * are `egress-denied` (a refused lookup or connection) and proxy decisions refused as not
 * granted. Hosts come from the sandbox: anything that is not a plain name or IP is left out.
 */
export function suggestGrants(records: readonly TraceRecord[]): { grants: string[]; skipped: number } {
  const grants: string[] = [];
  const seen = new Set<string>();
  let skipped = 0;
  for (const record of records) {
    const denied =
      record.type === 'sandbox.egress-denied' ||
      (record.type === 'sandbox.proxy' && record.decision === 'deny' && record.reason === 'not granted');
    if (!denied || typeof record.host !== 'string') continue;
    const host = record.host.toLowerCase();
    const ipv6 = host.includes(':');
    if (!(ipv6 ? IPV6.test(host) : HOST.test(host))) {
      skipped++;
      continue;
    }
    const port = typeof record.port === 'number' && Number.isInteger(record.port) ? record.port : undefined;
    const shown = ipv6 ? `[${host}]` : host;
    const grant = port === undefined || port === 80 || port === 443 ? shown : `${shown}:${port}`;
    if (seen.has(grant)) continue;
    seen.add(grant);
    grants.push(grant);
  }
  return { grants: grants.map((grant) => `--allow-net ${grant}`), skipped };
}
