/**
 * `--secret` in a real sandbox: the server's env holds a stand-in; Node's fetch, `https` and curl
 * inside call a bound host with it, and the upstream (a local server with a CA of the test's own,
 * reached through a test resolver and dialer as in egress.test.ts) receives the real value. The
 * sandbox never sees the real value: not in its environment, not in any reply.
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, Socket } from 'node:net';
import {
  type BoundSecret,
  bindSecret,
  parseSecretFlag,
  type Sandbox,
  type SandboxEvent,
} from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../src/index.js';
import { run } from './helpers.js';
import { makeTestCa, type TestCa } from './tls-fixture.js';

const PUBLIC_TEST_ADDRESS = '93.184.216.34';
const BOUND = 'api.bound.test';
const UNBOUND = 'other.bound.test';
const REAL = 'ghp_RealSecret0123456789abcdefREAL00001';

let ca: TestCa;
let upstream: HttpsServer;
let port = 0;
const received: Array<{ host: string; authorization: string; url: string }> = [];

function dial(address: string, to: number): Socket {
  if (address !== PUBLIC_TEST_ADDRESS || to !== 443) {
    const refused = new Socket();
    process.nextTick(() => refused.destroy(new Error('not a test upstream')));
    return refused;
  }
  return connect({ host: '127.0.0.1', port, allowHalfOpen: true });
}
const resolve = async (name: string) => {
  if (name !== BOUND && name !== UNBOUND) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return [PUBLIC_TEST_ADDRESS];
};

beforeAll(async () => {
  ca = makeTestCa([BOUND, UNBOUND]);
  upstream = createHttpsServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    received.push({
      host: String(req.headers.host),
      authorization: String(req.headers.authorization ?? ''),
      url: req.url ?? '',
    });
    res.setHeader('connection', 'close');
    res.end(req.url === '/reflect' ? `you sent ${req.headers.authorization}` : 'ok');
  });
  await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', done));
  port = (upstream.address() as { port: number }).port;
});
afterAll(() => {
  upstream?.close();
  ca?.dispose();
});

interface Session {
  box: Sandbox;
  secret: BoundSecret;
  events: SandboxEvent[];
  warnings: string[];
}

async function open(): Promise<Session> {
  const events: SandboxEvent[] = [];
  const warnings: string[] = [];
  const logger = { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) };
  const secret = bindSecret(parseSecretFlag(`GH_TOKEN@${BOUND}`), { GH_TOKEN: REAL });
  const box = await createLocalBackend({
    logger,
    resolve,
    dial,
    secretUpstreamCa: readFileSync(ca.caFile, 'utf8'),
  }).create({
    sessionId: 'secrets',
    env: { GH_TOKEN: secret.standIn },
    ttlMs: 60_000,
    network: { allow: [BOUND, UNBOUND], secrets: [secret] },
    onEvent: (event) => events.push(event),
  });
  return { box, secret, events, warnings };
}

const FETCH = String.raw`
(async () => {
  const r = await fetch(process.argv[1], { headers: { authorization: 'Bearer ' + process.env.GH_TOKEN } });
  console.log(r.status + ' ' + (await r.text()));
})().catch((e) => console.log('error ' + (e.cause?.code ?? e.message)));
`;
const HTTPS = String.raw`
require('node:https').get(process.argv[1], { headers: { authorization: 'token ' + process.env.GH_TOKEN } }, (r) => {
  let body = '';
  r.on('data', (d) => (body += d));
  r.on('end', () => console.log(r.statusCode + ' ' + body));
}).on('error', (e) => console.log('error ' + (e.code ?? e.message)));
`;

const PYTHON = String.raw`
import os, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={'Authorization': 'Bearer ' + os.environ['GH_TOKEN']})
with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=20) as r:
    print(r.status, r.read().decode())
`;

describe('--secret in a local sandbox', () => {
  let s: Session;
  beforeAll(async () => {
    s = await open();
  });
  afterAll(() => s?.box.close());

  it('the sandbox holds the stand-in, never the real value', async () => {
    const result = await run(s.box, ['sh', '-c', 'tr "\\0" "\\n" < /proc/self/environ']);
    expect(result.stdout).toContain(`GH_TOKEN=${s.secret.standIn}`);
    expect(result.stdout).not.toContain(REAL);
    expect(result.stdout).toContain('NODE_EXTRA_CA_CERTS=/run/mcp-sandbox-trust/node.pem');
  });

  it("Node's fetch, https.get and curl send the stand-in; the bound host receives the real value", async () => {
    received.length = 0;
    const fetched = await run(s.box, ['node', '-e', FETCH, `https://${BOUND}/fetch`]);
    const got = await run(s.box, ['node', '-e', HTTPS, `https://${BOUND}/https`]);
    const curled = await run(s.box, [
      'sh',
      '-c',
      `curl -sS --noproxy '*' -H "Authorization: Bearer $GH_TOKEN" https://${BOUND}/curl; echo; curl -sS -H "Authorization: Bearer $GH_TOKEN" https://${BOUND}/curl-proxy`,
    ]);
    expect(fetched.stdout.trim()).toBe('200 ok');
    expect(got.stdout.trim()).toBe('200 ok');
    expect(curled.stdout.trim()).toBe('ok\nok');
    expect(received).toEqual([
      { host: BOUND, authorization: `Bearer ${REAL}`, url: '/fetch' },
      { host: BOUND, authorization: `token ${REAL}`, url: '/https' },
      { host: BOUND, authorization: `Bearer ${REAL}`, url: '/curl' },
      { host: BOUND, authorization: `Bearer ${REAL}`, url: '/curl-proxy' },
    ]);
    for (const output of [fetched, got, curled]) expect(output.stdout + output.stderr).not.toContain(REAL);
    expect(JSON.stringify(s.events)).not.toContain(REAL);
    expect(s.events).toContainEqual({
      type: 'secret-substituted',
      name: 'GH_TOKEN',
      host: BOUND,
      method: 'GET',
      path: '/fetch',
    });
  });

  it("Debian's python3 urllib (stdlib, OpenSSL's trust from SSL_CERT_FILE) sends the stand-in; the bound host receives the real value", async () => {
    received.length = 0;
    const result = await run(s.box, ['/usr/bin/python3', '-c', PYTHON, `https://${BOUND}/python`]);
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('200 ok');
    expect(received).toEqual([{ host: BOUND, authorization: `Bearer ${REAL}`, url: '/python' }]);
    expect(result.stdout + result.stderr).not.toContain(REAL);
  });

  it('a granted host that is not bound gets the stand-in (its TLS is not intercepted)', async () => {
    received.length = 0;
    // The unbound host's certificate is the upstream's own: the sandbox must trust the test CA for it.
    const result = await run(s.box, [
      'sh',
      '-c',
      `curl -sS -k -H "Authorization: Bearer $GH_TOKEN" https://${UNBOUND}/x`,
    ]);
    expect(result.stdout).toBe('ok');
    expect(received).toEqual([{ host: UNBOUND, authorization: `Bearer ${s.secret.standIn}`, url: '/x' }]);
  });

  it('a reply that carries the real value is cut off, and said once on stderr', async () => {
    received.length = 0;
    const result = await run(s.box, ['node', '-e', FETCH, `https://${BOUND}/reflect`]);
    expect(received).toHaveLength(1);
    expect(result.stdout).toMatch(/^error /);
    expect(result.stdout + result.stderr).not.toContain(REAL);
    expect(s.warnings.join('\n')).toContain('a reply was cut off: it carried the real value of GH_TOKEN');
  });

  it('a stand-in in a DNS name is recorded as misuse', async () => {
    // As a name can carry it: lower case, `_` made `-`.
    await run(s.box, [
      'node',
      '-e',
      `require('node:dns').lookup(process.env.GH_TOKEN.toLowerCase().replace(/_/g, '-') + '.bound.test', () => {})`,
    ]);
    expect(s.events.some((e) => e.type === 'secret-misuse' && e.where === 'dns')).toBe(true);
  });
});
