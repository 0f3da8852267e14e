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

describe('host names the proxy is asked for (issue 20, both findings)', () => {
  // Raw requests to the sandbox's proxy: CONNECT with a NUL in the name, a plain-HTTP URL whose
  // host WHATWG keeps (`;`, `{`, `,`), a CONNECT with `;` (which Node's parser lets through), and a
  // control CONNECT to a plain granted name.
  const SCRIPT = `
    const net = require('node:net');
    const proxy = new URL(process.env.HTTP_PROXY);
    const ask = (head) => new Promise((resolve) => {
      const s = net.connect(Number(proxy.port), proxy.hostname, () => s.write(head));
      let got = '';
      s.on('data', (c) => { got += c; });
      s.on('close', () => resolve(got.split('\\r\\n')[0]));
      s.on('error', () => resolve('error'));
      s.setTimeout(5000, () => s.destroy());
    });
    (async () => {
      for (const head of [
        'CONNECT 203.0.113.7\\0.granted.test:80 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n',
        'CONNECT x;id;x.granted.test:80 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n',
        'GET http://x;%7Btouch,m%7D;x.granted.test/ HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n',
        'CONNECT ok.granted.test:80 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n',
      ]) console.error('proxy-said: ' + JSON.stringify(await ask(head)));
    })();`;

  // Fails before the proxy URL's host was parsed as a host name: "x;{touch,m};x.granted.test"
  // went on to the grant decision (403, not granted) instead of being refused as a name.
  it('refuses both as invalid names before any decision, records that, and suggests no flag', {
    timeout: 60_000,
  }, async () => {
    const trace = join(dir, `${randomUUID()}.jsonl`);
    const run = spawnBin([
      'run',
      '--allow-net',
      '*.granted.test',
      '--trace',
      trace,
      '--',
      'node',
      '-e',
      SCRIPT,
    ]);
    const { stderr } = await run.result;
    run.child.stdin.destroy();
    const said = [...stderr.matchAll(/proxy-said: (".*")/g)].map((m) => JSON.parse(m[1] as string) as string);
    // A NUL in the request line: Node's HTTP parser cuts the connection before the proxy sees it.
    expect(said[0]).toBe('');
    expect(said[1]).toMatch(/^HTTP\/1\.1 400 /);
    expect(said[2]).toMatch(/^HTTP\/1\.1 400 /);
    // Control: a plain name reaches the decision (and is refused only because it does not resolve).
    expect(said[3]).toMatch(/^HTTP\/1\.1 (403|502) /);
    const records = traceRecords(trace).filter((r) => r.type === 'sandbox.proxy');
    expect(records.filter((r) => r.reason === 'invalid host name')).toHaveLength(2);
    expect(records.some((r) => typeof r.host === 'string' && /[;{\0]/.test(r.host))).toBe(false);
    expect(records).toContainEqual(expect.objectContaining({ method: 'CONNECT', host: 'ok.granted.test' }));
    expect(stderr).toContain('the server asked the proxy for a host name that is not a valid DNS name');
    expect(stderr).not.toMatch(/--allow-net \S*[;{}\\]/);
  });
});
