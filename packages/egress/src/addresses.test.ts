import { type Host, parseHost } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import { addressRefusal, canonicalIp, hostAddresses } from './addresses.js';
import { decide, parseGrant } from './grants.js';

/** A host as the proxy's parsers hand it to `decide`. */
function at(text: string): Host {
  const host = parseHost(text);
  if (host === undefined) throw new Error(`not a host: ${text}`);
  return host;
}

// Each row: an address and a word its refusal must name, or undefined where it may be reached.
const CASES: ReadonlyArray<readonly [string, string | undefined]> = [
  // IPv4: the special-purpose registry's blocks that are not globally reachable (documentation
  // blocks excepted: see addresses.ts).
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.254', 'carrier-grade NAT'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['169.254.169.254', 'link-local'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.0.0.8', 'IETF'],
  ['192.0.2.2', undefined],
  ['192.88.99.1', '6to4 relay'],
  ['192.168.1.1', 'private'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['198.51.100.7', undefined],
  ['203.0.113.9', undefined],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  // IPv4 neighbours of those blocks, public.
  ['1.1.1.1', undefined],
  ['8.8.8.8', undefined],
  ['9.255.255.255', undefined],
  ['11.0.0.0', undefined],
  ['100.63.255.255', undefined],
  ['100.128.0.0', undefined],
  ['126.255.255.255', undefined],
  ['128.0.0.0', undefined],
  ['172.15.255.255', undefined],
  ['172.32.0.0', undefined],
  ['192.0.1.255', undefined],
  ['192.0.3.0', undefined],
  ['192.167.255.255', undefined],
  ['192.169.0.0', undefined],
  ['198.17.255.255', undefined],
  ['198.20.0.0', undefined],
  ['223.255.255.255', undefined],
  ['93.184.216.34', undefined],
  // IPv6 outside global unicast.
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::127.0.0.1', 'IPv4-compatible'],
  ['::7f00:1', 'IPv4-compatible'],
  ['::8.8.8.8', 'IPv4-compatible'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated'],
  ['::ffff:0:808:808', 'IPv4-translated'],
  ['64:ff9b:1::a00:1', 'local-use NAT64'],
  ['64:ff9b:1:ffff::1', 'local-use NAT64'],
  ['100::1', 'discard-only'],
  ['fc00::1', 'unique local'],
  ['fd00:ec2::254', 'unique local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['fec0::1', 'site-local'],
  ['ff02::1', 'multicast'],
  ['1::1', 'not global unicast'],
  ['4000::1', 'not global unicast'],
  ['5f00::1', 'not global unicast'],
  // IPv4-mapped: judged as the IPv4 address, in every spelling.
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::FFFF:7F00:0001', 'loopback'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local'],
  ['::ffff:198.18.0.1', 'benchmarking'],
  ['::ffff:8.8.8.8', undefined],
  // NAT64 well-known prefix: judged by the embedded IPv4 address.
  ['64:ff9b::127.0.0.1', 'NAT64 form of 127.0.0.1 (loopback)'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 form of 169.254.169.254 (link-local'],
  ['64:ff9b::10.0.0.1', 'NAT64 form of 10.0.0.1 (private)'],
  ['64:ff9b::808:808', undefined],
  // 6to4: judged by the IPv4 address in bits 16–47.
  ['2002:7f00:1::', '6to4 form of 127.0.0.1 (loopback)'],
  ['2002:a9fe:a9fe::1', '6to4 form of 169.254.169.254 (link-local'],
  ['2002:c612:1::1', '6to4 form of 198.18.0.1 (benchmarking)'],
  ['2002:c000:202::1', undefined],
  ['2002:808:808::1', undefined],
  // Special blocks inside 2000::/3 (documentation is left reachable: see addresses.ts).
  ['2001::1', 'IETF'],
  ['2001:0:4136:e378::1', 'IETF'],
  ['2001:2::1', 'IETF'],
  ['2001:10::1', 'IETF'],
  ['2001:db8::1', undefined],
  ['3fff::1', undefined],
  // Global unicast.
  ['2001:4860:4860::8888', undefined],
  ['2606:4700:4700::1111', undefined],
  ['2a00:1450:4001:80b::200e', undefined],
  ['3ffe::1', undefined],
  // Not addresses at all.
  ['example.com', 'not an IP'],
  ['', 'not an IP'],
  ['1.2.3', 'not an IP'],
];

describe('addressRefusal', () => {
  it.each(CASES)('%s → %s', (address, reason) => {
    const got = addressRefusal(address);
    if (reason === undefined) expect(got).toBeUndefined();
    else expect(got).toContain(reason);
  });

  it("refuses this host's own addresses, in every form, even public ones", () => {
    const own = new Set(['93.184.216.34', canonicalIp('2001:4860:4860::8888')]);
    expect(addressRefusal('93.184.216.34', own)).toBe("this host's own address");
    expect(addressRefusal('::ffff:93.184.216.34', own)).toBe("this host's own address");
    expect(addressRefusal('::ffff:5db8:d822', own)).toBe("this host's own address");
    expect(addressRefusal('64:ff9b::93.184.216.34', own)).toBe("NAT64 form of this host's own address");
    expect(addressRefusal('2002:5db8:d822::1', own)).toBe("6to4 form of this host's own address");
    expect(addressRefusal('2001:4860:4860:0::8888', own)).toBe("this host's own address");
    expect(addressRefusal('10.0.0.1', new Set(['10.0.0.1']))).toBe("private, this host's own address");
    // Neighbours are not.
    expect(addressRefusal('93.184.216.35', own)).toBeUndefined();
  });

  it("reads this host's interfaces, loopback included", () => {
    const own = hostAddresses();
    expect(own.has('127.0.0.1')).toBe(true);
    for (const address of own) expect(canonicalIp(address)).toBe(address);
  });
});

describe('canonicalIp', () => {
  it('gives one spelling per address', () => {
    expect(canonicalIp('::1')).toBe('0:0:0:0:0:0:0:1');
    expect(canonicalIp('0::0:1')).toBe('0:0:0:0:0:0:0:1');
    expect(canonicalIp('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(canonicalIp('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(canonicalIp('2001:DB8::1')).toBe('2001:db8:0:0:0:0:0:1');
    expect(canonicalIp('fe80::1%eth0')).toBe('fe80:0:0:0:0:0:0:1');
    expect(canonicalIp('1:2:3:4:5:6:7.8.9.10')).toBe('1:2:3:4:5:6:708:90a');
  });
});

describe("decide under '*'", () => {
  const any = [parseGrant('*')];
  const own = () => new Set(['198.51.100.20', '93.184.216.34']);
  const resolveTo = (address: string) => async () => [address];

  it("refuses this host's addresses, by IP and by a name resolving to them", async () => {
    expect(await decide(any, at('93.184.216.34'), 80, undefined, own)).toMatchObject({
      allow: false,
      reason: expect.stringContaining("this host's own address"),
    });
    const byName = await decide(any, at('me.example'), 80, resolveTo('93.184.216.34'), own);
    expect(byName).toMatchObject({ allow: false, reason: expect.stringContaining("this host's own") });
    expect((await decide(any, at('93.184.216.35'), 80, undefined, own)).allow).toBe(true);
  });

  it('refuses every non-global form', async () => {
    for (const address of ['[::127.0.0.1]', '[::ffff:0:7f00:1]', '[64:ff9b::7f00:1]', '[64:ff9b:1::1]']) {
      expect((await decide(any, at(address), 80, undefined, own)).allow, address).toBe(false);
    }
    for (const address of ['[2002:7f00:1::1]', '198.18.0.1', '[::ffff:198.18.0.1]']) {
      expect((await decide(any, at(address), 80, undefined, own)).allow, address).toBe(false);
    }
  });

  it('reaches any of them when the grant names the IP itself', async () => {
    for (const ip of ['93.184.216.34', '198.18.0.1', '::127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::1']) {
      const grant = [parseGrant(ip.includes(':') ? `[${ip}]:80` : `${ip}:80`)];
      const host = ip.includes(':') ? `[${ip}]` : ip;
      expect((await decide(grant, at(host), 80, undefined, own)).allow, ip).toBe(true);
    }
  });

  it("lets a grant naming the IP win over '*' listed before it", async () => {
    const grants = ['*', '93.184.216.34:8080'].map(parseGrant);
    expect((await decide(grants, at('93.184.216.34'), 8080, undefined, own)).allow).toBe(true);
    expect((await decide(grants, at('93.184.216.34'), 8081, undefined, own)).allow).toBe(false);
  });

  it('refuses a name with any refused address among its answers', async () => {
    const both = async () => ['8.8.8.8', '198.18.0.1'];
    expect((await decide(any, at('mixed.example'), 80, both, own)).allow).toBe(false);
  });
});
