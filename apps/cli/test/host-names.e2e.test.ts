/**
 * Host names from the sandbox, through the built binary: a name is parsed once where it enters
 * (a DNS question here) and nothing that is not a plain name reaches a grant, `dns.lookup` or a
 * suggested flag (issue 20).
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin, traceRecords } from './helpers.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/dns-names.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-host-names-'));
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Asked {
  labels: string[];
  rcode: number | 'timeout';
  address: string | null;
  connect?: string;
}

async function askInside(grant: string, names: string[][]) {
  const trace = join(dir, `${randomUUID()}.jsonl`);
  const run = spawnBin([
    'run',
    '--allow-net',
    grant,
    '--mount',
    `${REPO}:ro`,
    '--trace',
    trace,
    '--',
    'node',
    FIXTURE,
    JSON.stringify(names),
    '80',
  ]);
  // stdin stays open: the program exits on its own, and so does the session.
  const { stderr } = await run.result;
  run.child.stdin.destroy();
  const asked = [...stderr.matchAll(/dns-names: (\{.*\})/g)].map((m) => JSON.parse(m[1] as string) as Asked);
  return { asked, stderr, records: traceRecords(trace) };
}

describe('a NUL byte in a DNS name against a *.suffix grant (issue 20, finding 1)', () => {
  // Fails before names were parsed at the DNS question: the responder matched
  // "203.0.113.7\0.granted.test" against *.granted.test as a string and handed out a synthetic
  // address; the transparent listener resolved the name with dns.lookup, which stopped at the
  // NUL, and the trace shows the host dialing 203.0.113.7 (a public address nobody granted).
  it('gets no address, the host never resolves or dials it, and no flag is suggested', {
    timeout: 60_000,
  }, async () => {
    const attack = ['203', '0', '113', '7\0', 'granted', 'test'];
    const control = ['ok', 'granted', 'test'];
    const { asked, stderr, records } = await askInside('*.granted.test', [control, attack]);
    // Control: the program ran, asked, and a granted name got its synthetic address.
    expect(asked[0]).toMatchObject({
      labels: control,
      rcode: 0,
      address: expect.stringMatching(/^127\.77\./),
    });
    // The attack: refused at the question, no address to connect to.
    expect(asked[1]).toMatchObject({ labels: attack, address: null });
    expect(asked[1]?.rcode).not.toBe(0);
    const proxied = records.filter((r) => r.type === 'sandbox.proxy');
    expect(proxied.some((r) => r.address === '203.0.113.7')).toBe(false);
    expect(proxied.some((r) => typeof r.host === 'string' && r.host.includes('\0'))).toBe(false);
    // The refusal is recorded, named as an invalid name, and no flag names it.
    expect(records).toContainEqual(
      expect.objectContaining({ type: 'sandbox.egress-denied', via: 'dns', reason: 'invalid host name' }),
    );
    expect(stderr).toContain('a host name that is not a valid DNS name');
    expect(stderr).not.toMatch(/--allow-net [^\n]*203/);
  });
});
