import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * Which IP addresses a sandbox may reach through a grant that does not name them (`*`, a host name,
 * a suffix). The rule is "globally reachable unicast, and not this host": for IPv6 an allowlist
 * (global unicast 2000::/3 only, minus the special-purpose blocks inside it); for IPv4, whose
 * public space is the complement of a short list, a table of the special-purpose registry's blocks
 * that are not globally reachable. Addresses that embed an IPv4 address (mapped, 6to4, the NAT64
 * well-known prefix) are judged by that IPv4 address. Granting the IP itself overrides all of it.
 */

type Range = readonly [base: bigint, prefix: number, reason: string];

const v4 = (text: string, prefix: number, reason: string): Range => [ipv4Value(text), prefix, reason];
const v6 = (text: string, prefix: number, reason: string): Range => [ipv6Value(text), prefix, reason];

/**
 * IPv4 blocks that are not globally reachable (IANA special-purpose registry, multicast, reserved),
 * where a service of the user's network could answer. The documentation blocks (192.0.2.0/24,
 * 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20) are left reachable on purpose: no
 * network is assigned there, so refusing them protects nothing, and some networks (test rigs behind
 * a resolving proxy) hand out addresses from them for real names. This host's own addresses are
 * refused whatever block they are in.
 */
const IPV4_NOT_GLOBAL: readonly Range[] = [
  v4('0.0.0.0', 8, 'unspecified ("this network")'),
  v4('10.0.0.0', 8, 'private'),
  v4('100.64.0.0', 10, 'carrier-grade NAT (cloud metadata)'),
  v4('127.0.0.0', 8, 'loopback'),
  v4('169.254.0.0', 16, 'link-local (cloud metadata)'),
  v4('172.16.0.0', 12, 'private'),
  v4('192.0.0.0', 24, 'IETF protocol assignments'),
  v4('192.88.99.0', 24, '6to4 relay anycast'),
  v4('192.168.0.0', 16, 'private'),
  v4('198.18.0.0', 15, 'benchmarking'),
  v4('224.0.0.0', 4, 'multicast'),
  v4('240.0.0.0', 4, 'reserved or broadcast'),
];

/** The only IPv6 block an unnamed grant may reach, before the exceptions below. */
const IPV6_GLOBAL_UNICAST = v6('2000::', 3, 'global unicast');

/** Blocks inside 2000::/3 that are not globally reachable. */
const IPV6_NOT_GLOBAL_INSIDE: readonly Range[] = [
  v6('2001::', 23, 'IETF protocol assignments (Teredo, benchmarking, ORCHID)'),
];

/** Why an address outside 2000::/3 is refused: the blocks a reader would look for, by name. */
const IPV6_OUTSIDE_GLOBAL: readonly Range[] = [
  v6('::', 128, 'unspecified'),
  v6('::1', 128, 'loopback'),
  v6('::ffff:0:0:0', 96, 'IPv4-translated'),
  v6('::', 96, 'IPv4-compatible'),
  v6('64:ff9b:1::', 48, 'local-use NAT64'),
  v6('100::', 64, 'discard-only'),
  v6('fc00::', 7, 'private (unique local)'),
  v6('fe80::', 10, 'link-local'),
  v6('fec0::', 10, 'site-local'),
  v6('ff00::', 8, 'multicast'),
];

/** Prefixes whose addresses carry an IPv4 address: [prefix, length, bits right of it, name]. */
const EMBEDS_IPV4: ReadonlyArray<readonly [base: bigint, prefix: number, shift: bigint, what: string]> = [
  [ipv6Value('::ffff:0:0'), 96, 0n, 'IPv4-mapped'],
  [ipv6Value('64:ff9b::'), 96, 0n, 'NAT64'],
  [ipv6Value('2002::'), 16, 80n, '6to4'],
];

/**
 * Why `ip` must not be reached through a grant that does not name it, or undefined when it may.
 * `ownAddresses` are this host's addresses (canonical, as `hostAddresses()` gives them): a service
 * listening on 0.0.0.0 is reachable through each of them, public or not.
 */
export function addressRefusal(
  ip: string,
  ownAddresses: ReadonlySet<string> = new Set(),
): string | undefined {
  const family = isIP(stripZone(ip));
  if (family === 0) return 'not an IP address';
  const canonical = canonicalIp(ip);
  const why = rangeRefusal(canonical, ownAddresses);
  if (!ownAddresses.has(canonical)) return why;
  return why ? `${why}, this host's own address` : "this host's own address";
}

function rangeRefusal(canonical: string, ownAddresses: ReadonlySet<string>): string | undefined {
  if (isIP(canonical) === 4) return ipv4Refusal(ipv4Value(canonical));
  const value = ipv6Value(canonical);
  for (const [base, prefix, shift, what] of EMBEDS_IPV4) {
    if (!inRange(value, base, prefix, 128)) continue;
    const embedded = formatIpv4((value >> shift) & 0xffffffffn);
    if (ownAddresses.has(embedded)) return `${what} form of this host's own address`;
    const why = ipv4Refusal(ipv4Value(embedded));
    return why ? `${what} form of ${embedded} (${why})` : undefined;
  }
  if (!inRange(value, IPV6_GLOBAL_UNICAST[0], IPV6_GLOBAL_UNICAST[1], 128)) {
    const named = IPV6_OUTSIDE_GLOBAL.find(([base, prefix]) => inRange(value, base, prefix, 128));
    return named ? named[2] : 'not global unicast';
  }
  const inside = IPV6_NOT_GLOBAL_INSIDE.find(([base, prefix]) => inRange(value, base, prefix, 128));
  return inside?.[2];
}

/** This host's interface addresses, every family and interface, canonical (see `canonicalIp`). */
export function hostAddresses(): Set<string> {
  const found = new Set<string>();
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      if (isIP(stripZone(entry.address))) found.add(canonicalIp(entry.address));
    }
  }
  return found;
}

/**
 * IPv4 as a dotted quad; IPv6 fully expanded in lower case without a zone; an IPv4-mapped IPv6
 * address becomes its IPv4 address (Node connects to that address for it). `ip` must be an IP.
 */
export function canonicalIp(ip: string): string {
  const bare = stripZone(ip);
  if (isIP(bare) === 4) return formatIpv4(ipv4Value(bare));
  const value = ipv6Value(bare);
  if (value >> 32n === 0xffffn) return formatIpv4(value & 0xffffffffn);
  const words: string[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) words.push(((value >> shift) & 0xffffn).toString(16));
  return words.join(':');
}

function ipv4Refusal(value: bigint): string | undefined {
  return IPV4_NOT_GLOBAL.find(([base, prefix]) => inRange(value, base, prefix, 32))?.[2];
}

function inRange(value: bigint, base: bigint, prefix: number, bits: number): boolean {
  const shift = BigInt(bits - prefix);
  return value >> shift === base >> shift;
}

function stripZone(ip: string): string {
  const zone = ip.indexOf('%');
  return zone === -1 ? ip : ip.slice(0, zone);
}

function ipv4Value(text: string): bigint {
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part) & 255), 0n);
}

function formatIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join('.');
}

/** The 128-bit value of an IPv6 address (`::` shorthand and a trailing dotted quad allowed). */
function ipv6Value(text: string): bigint {
  let rest = text.toLowerCase();
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(rest);
  let tail: bigint[] = [];
  if (quad) {
    const value = ipv4Value(quad[1]!);
    tail = [value >> 16n, value & 0xffffn];
    rest = rest.slice(0, quad.index);
    if (rest.endsWith(':') && !rest.endsWith('::')) rest = rest.slice(0, -1);
  }
  const parse = (part: string) => (part ? part.split(':').map((h) => BigInt(Number.parseInt(h, 16))) : []);
  const [head, after] = rest.split('::') as [string, string | undefined];
  const left = parse(head);
  const right = [...(after === undefined ? [] : parse(after)), ...tail];
  const words =
    after === undefined
      ? [...left, ...right]
      : [...left, ...new Array<bigint>(8 - left.length - right.length).fill(0n), ...right];
  return words.reduce((acc, word) => (acc << 16n) | word, 0n);
}
