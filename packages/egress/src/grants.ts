import { lookup } from 'node:dns/promises';
import {
  type Host,
  type HostName,
  type IpLiteral,
  parseHostName,
  parseIpLiteral,
  UsageError,
} from '@mcpsandbox/core';
import { addressRefusal, canonicalIp, hostAddresses } from './addresses.js';

/** One parsed `--allow-net` entry: each host part is a validated value, never the entry's text. */
export type NetGrant =
  | { readonly kind: 'any'; readonly host: '*'; readonly port: number | undefined }
  | { readonly kind: 'host'; readonly host: HostName; readonly port: number | undefined }
  /** `host` is the suffix with its leading dot (`.example.com`), its name validated. */
  | { readonly kind: 'suffix'; readonly host: `.${HostName}`; readonly port: number | undefined }
  | { readonly kind: 'ip'; readonly host: IpLiteral; readonly port: number | undefined };

/**
 * Parses `host`, `host:port`, `*.suffix[:port]`, an IPv4/IPv6 literal (`[::1]:443`) or `*`.
 * A host without a port grants every port of that host. Host parts go through core's host-name
 * parser: a grant names exactly what a decision and a lookup will see.
 */
export function parseGrant(entry: string): NetGrant {
  const text = entry.trim();
  if (text === '*') return { kind: 'any', host: '*', port: undefined };
  let hostText = text;
  let port: number | undefined;
  const bracket = /^(\[[^\]]+\])(?::(\d+))?$/.exec(text);
  if (bracket) {
    hostText = bracket[1]!;
    port = bracket[2] === undefined ? undefined : parsePort(bracket[2], entry);
  } else if (parseIpLiteral(text) === undefined) {
    const colon = text.lastIndexOf(':');
    if (colon !== -1) {
      hostText = text.slice(0, colon);
      port = parsePort(text.slice(colon + 1), entry);
    }
  }
  const ip = parseIpLiteral(hostText);
  if (ip !== undefined) return { kind: 'ip', host: ip, port };
  if (hostText.startsWith('*.')) {
    const suffix = parseHostName(hostText.slice(2));
    if (suffix === undefined) throw new UsageError(`bad network grant "${entry}": expected *.suffix`);
    return { kind: 'suffix', host: `.${suffix}`, port };
  }
  const name = parseHostName(hostText);
  if (name === undefined) {
    throw new UsageError(`bad network grant "${entry}": expected host[:port], *.suffix, an IP or *`);
  }
  return { kind: 'host', host: name, port };
}

function parsePort(text: string, entry: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65535) {
    throw new UsageError(`bad port in network grant "${entry}"`);
  }
  return port;
}

/** The first grant that admits `host:port`, or undefined. */
export function matchGrant(grants: readonly NetGrant[], host: Host, port: number): NetGrant | undefined {
  return grants.find((grant) => {
    if (grant.port !== undefined && grant.port !== port) return false;
    switch (grant.kind) {
      case 'any':
        return true;
      case 'ip':
        return host.kind === 'ip' && sameIp(grant.host, host.value);
      case 'host':
        return host.kind === 'name' && grant.host === host.value;
      case 'suffix':
        // Both sides are validated names: a label boundary is a real dot, not a byte of a label.
        return host.kind === 'name' && host.value.endsWith(grant.host);
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

/** Resolves a validated name on the host: nothing else reaches `dns.lookup`. */
export type Resolver = (host: HostName) => Promise<readonly string[]>;

/** This host's resolver (`dns.lookup`, as every other program here resolves). */
export const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true })).map((entry) => entry.address);

/**
 * `resolve`, with one lookup for the decisions about a name made while a lookup of it is under
 * way: a burst of tunnels to one host (an installer's parallel downloads) is one query, and a
 * resolver that drops some queries of a burst costs its retry timeout (5 s) once, not for each
 * connection. Nothing is kept once the lookup is over; every decision checks what it gets.
 * Bounded by the decisions under way, each of which holds its lookup anyway.
 */
export function sharedLookups(resolve: Resolver): Resolver {
  const pending = new Map<HostName, Promise<readonly string[]>>();
  return (host) => {
    const shared = pending.get(host);
    if (shared) return shared;
    const started = Promise.resolve()
      .then(() => resolve(host))
      .finally(() => pending.delete(host));
    pending.set(host, started);
    return started;
  };
}

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
  target: Host,
  port: number,
  resolve: Resolver = systemResolver,
  ownAddresses: () => ReadonlySet<string> = hostAddresses,
): Promise<Decision> {
  // A grant naming the IP wins over `*` listed before it: it is the user's word for that address.
  const named =
    target.kind === 'ip'
      ? matchGrant(
          grants.filter((g) => g.kind === 'ip'),
          target,
          port,
        )
      : undefined;
  const grant = named ?? matchGrant(grants, target, port);
  if (!grant) return { allow: false, reason: 'not granted' };
  if (target.kind === 'ip') {
    if (grant.kind === 'ip') return { allow: true, address: canonicalIp(target.value), grant };
    const why = addressRefusal(target.value, ownAddresses());
    if (why) return { allow: false, reason: `${why}; grant it as an explicit IP` };
    return { allow: true, address: canonicalIp(target.value), grant };
  }
  let addresses: readonly string[];
  try {
    addresses = await resolve(target.value);
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
