import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { UsageError } from '@mcpsandbox/core';
import { addressRefusal, canonicalIp, hostAddresses } from './addresses.js';

/** One parsed `--allow-net` entry. */
export interface NetGrant {
  readonly kind: 'any' | 'host' | 'suffix' | 'ip';
  /** Lower-case host name, IP (IPv6 without brackets) or suffix (with its leading dot). */
  readonly host: string;
  /** Absent: any port. */
  readonly port: number | undefined;
}

/**
 * Parses `host`, `host:port`, `*.suffix[:port]`, an IPv4/IPv6 literal (`[::1]:443`) or `*`.
 * A host without a port grants every port of that host.
 */
export function parseGrant(entry: string): NetGrant {
  const text = entry.trim().toLowerCase();
  if (text === '*') return { kind: 'any', host: '*', port: undefined };
  let host = text;
  let port: number | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracket) {
    host = bracket[1]!;
    port = bracket[2] === undefined ? undefined : parsePort(bracket[2], entry);
  } else if (isIP(text) !== 6) {
    const colon = text.lastIndexOf(':');
    if (colon !== -1) {
      host = text.slice(0, colon);
      port = parsePort(text.slice(colon + 1), entry);
    }
  }
  if (isIP(host)) return { kind: 'ip', host, port };
  if (host.startsWith('*.')) {
    const suffix = host.slice(1);
    if (!isHostName(suffix.slice(1))) throw new UsageError(`bad network grant "${entry}"`);
    return { kind: 'suffix', host: suffix, port };
  }
  if (!isHostName(host))
    throw new UsageError(`bad network grant "${entry}": expected host[:port] or *.suffix`);
  return { kind: 'host', host, port };
}

function parsePort(text: string, entry: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535) {
    throw new UsageError(`bad port in network grant "${entry}"`);
  }
  return port;
}

function isHostName(host: string): boolean {
  return /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/.test(
    host,
  );
}

/** Normalizes a requested host as the grant matcher compares it. */
export function normalizeHost(host: string): string {
  const lower = host.toLowerCase();
  const unbracketed = lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
  return unbracketed.endsWith('.') ? unbracketed.slice(0, -1) : unbracketed;
}

/** The first grant that admits `host:port`, or undefined. */
export function matchGrant(grants: readonly NetGrant[], host: string, port: number): NetGrant | undefined {
  const wanted = normalizeHost(host);
  return grants.find((grant) => {
    if (grant.port !== undefined && grant.port !== port) return false;
    switch (grant.kind) {
      case 'any':
        return true;
      case 'ip':
        return isIP(wanted) !== 0 && sameIp(grant.host, wanted);
      case 'host':
        return normalizeHost(grant.host) === wanted;
      case 'suffix':
        return wanted.endsWith(grant.host) && wanted.length > grant.host.length;
      default:
        return false;
    }
  });
}

function sameIp(a: string, b: string): boolean {
  return canonicalIp(a) === canonicalIp(b);
}

export type Decision =
  | { readonly allow: true; readonly address: string; readonly grant: NetGrant }
  | { readonly allow: false; readonly reason: string };

export type Resolver = (host: string) => Promise<readonly string[]>;

const defaultResolver: Resolver = async (host) =>
  (await lookup(host, { all: true })).map((entry) => entry.address);

/**
 * Decides whether `host:port` may be reached under `grants`. A name is resolved here, on the
 * host, once: every address must pass `addressRefusal` (a granted name that points at loopback,
 * a private network, the metadata service or this host is refused), and the caller connects to
 * the address that was checked, so a second lookup cannot swap it. An IP is reached when granted
 * as that IP, or under `*` when `addressRefusal` has nothing against it. Never throws.
 * `ownAddresses` defaults to this host's interface addresses, read at each decision.
 */
export async function decide(
  grants: readonly NetGrant[],
  host: string,
  port: number,
  resolve: Resolver = defaultResolver,
  ownAddresses: () => ReadonlySet<string> = hostAddresses,
): Promise<Decision> {
  const target = normalizeHost(host);
  // A grant naming the IP wins over `*` listed before it: it is the user's word for that address.
  const named = isIP(target)
    ? matchGrant(
        grants.filter((g) => g.kind === 'ip'),
        target,
        port,
      )
    : undefined;
  const grant = named ?? matchGrant(grants, target, port);
  if (!grant) return { allow: false, reason: 'not granted' };
  if (isIP(target)) {
    if (grant.kind === 'ip') return { allow: true, address: canonicalIp(target), grant };
    const why = addressRefusal(target, ownAddresses());
    if (why) return { allow: false, reason: `${why}; grant it as an explicit IP` };
    return { allow: true, address: canonicalIp(target), grant };
  }
  let addresses: readonly string[];
  try {
    addresses = await resolve(target);
  } catch (error) {
    return {
      allow: false,
      reason: `cannot resolve: ${(error as NodeJS.ErrnoException)?.code ?? String(error)}`,
    };
  }
  if (!Array.isArray(addresses) || addresses.length === 0) {
    return { allow: false, reason: 'cannot resolve: no address' };
  }
  const own = ownAddresses();
  for (const address of addresses) {
    const why = addressRefusal(String(address), own);
    if (why) return { allow: false, reason: `resolves to ${address} (${why}); grant it as an explicit IP` };
  }
  return { allow: true, address: canonicalIp(addresses[0]!), grant };
}
