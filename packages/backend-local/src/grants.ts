import { isIP } from 'node:net';
import { UsageError } from '@mcpsandbox/core';

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

/** IPv4 dotted quad, or fully expanded lower-case IPv6; IPv4-mapped IPv6 becomes IPv4. */
export function canonicalIp(ip: string): string {
  if (isIP(ip) === 4) return ip;
  const words = ipv6Words(ip);
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) {
    return `${words[6]! >> 8}.${words[6]! & 255}.${words[7]! >> 8}.${words[7]! & 255}`;
  }
  return words.map((w) => w.toString(16)).join(':');
}

function ipv6Words(ip: string): number[] {
  let text = ip.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  // A trailing dotted quad (::ffff:1.2.3.4) becomes two words.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part ? part.split(':').map((h) => Number.parseInt(h, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const fill = tail === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...fill, ...right];
}

/**
 * Why an address must not be reached through a granted *name*: loopback, private, link-local
 * (cloud metadata lives there), carrier-grade NAT, unspecified, multicast and reserved ranges.
 * Returns undefined for a public address.
 */
export function privateAddressReason(ip: string): string | undefined {
  const canonical = canonicalIp(ip);
  if (isIP(canonical) === 4) {
    const [a, b] = canonical.split('.').map(Number) as [number, number, number, number];
    if (a === 127) return 'loopback';
    if (a === 0) return 'unspecified';
    if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
    if (a === 169 && b === 254) return 'link-local (cloud metadata)';
    if (a === 100 && b >= 64 && b <= 127) return 'carrier-grade NAT (cloud metadata)';
    if (a === 192 && b === 0 && canonical.startsWith('192.0.0.')) return 'IETF reserved';
    if (a >= 224) return 'multicast or reserved';
    return undefined;
  }
  const words = ipv6Words(canonical);
  const first = words[0]!;
  if (words.every((w) => w === 0)) return 'unspecified';
  if (words.slice(0, 7).every((w) => w === 0) && words[7] === 1) return 'loopback';
  if ((first & 0xfe00) === 0xfc00) return 'private (unique local)';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  // NAT64 (64:ff9b::/96) carries an IPv4 address in its last two words.
  if (first === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)) {
    const v4 = `${words[6]! >> 8}.${words[6]! & 255}.${words[7]! >> 8}.${words[7]! & 255}`;
    return privateAddressReason(v4);
  }
  return undefined;
}
