/**
 * `--secret` on the seatbelt engine, with the stand-in sandbox-exec (Linux has no Seatbelt; the
 * stand-in enforces nothing, so this checks the wiring: the server's env, its trust files, the
 * profile's reads of them, and the session proxy's substitution; setup steps get none of it).
 * The bound host resolves to a public-looking address that is dialled as a loopback upstream.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { connect, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindSecret, parseSecretFlag, type Sandbox, type SandboxEvent } from '@mcpsandbox/core';
import { SessionCa } from '@mcpsandbox/egress/secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSeatbeltBackend } from '../src/backend.js';
import { profilePath } from '../src/profile/plan.js';
import { decide, parseProfile } from '../src/sbpl/evaluate.js';

const STANDIN = new URL('fixtures/standin-sandbox-exec.sh', import.meta.url).pathname;
const BOUND = 'api.bound.test';
const PUBLIC = '93.184.216.34';
const REAL = 'ghp_SeatbeltReal0123456789abcdefREAL0001';
const TRUST_VARS = ['CURL_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'SSL_CERT_FILE'];

let stateDir: string;
let upstream: Server;
let upstreamCaFile: string;
let port = 0;
const seen: string[] = [];
const events: SandboxEvent[] = [];
let sandbox: Sandbox;
const secret = bindSecret(parseSecretFlag(`GH_TOKEN@${BOUND}`), { GH_TOKEN: REAL });

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'seatbelt-secrets-'));
  const ca = await SessionCa.create([parseSecretFlag(`X@${BOUND}`).hosts[0]!]);
  upstreamCaFile = join(stateDir, 'upstream-ca.pem');
  writeFileSync(upstreamCaFile, ca.pem);
  upstream = createServer(await ca.leaf(parseSecretFlag(`X@${BOUND}`).hosts[0]!), (req, res) => {
    seen.push(String(req.headers.authorization ?? ''));
    res.setHeader('connection', 'close');
    res.end('ok');
  });
  await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', done));
  port = (upstream.address() as { port: number }).port;
  sandbox = await createSeatbeltBackend({
    platform: 'darwin',
    sandboxExec: STANDIN,
    stateDir,
    hostEnv: { PATH: process.env.PATH, HOME: stateDir },
    secretUpstreamCa: ca.pem,
    resolve: async (name) => (name === BOUND ? [PUBLIC] : []),
    dial: (address, to) => {
      if (address === PUBLIC && to === 443) return connect({ host: '127.0.0.1', port });
      const refused = new Socket();
      process.nextTick(() => refused.destroy(new Error('not a test upstream')));
      return refused;
    },
  }).create({
    sessionId: 'secrets',
    env: { GH_TOKEN: secret.standIn },
    ttlMs: 60_000,
    network: { allow: [BOUND], secrets: [secret] },
    onEvent: (event) => events.push(event),
  });
});
afterAll(async () => {
  await sandbox?.close();
  upstream?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

async function run(command: string, setup = false) {
  const proc = await sandbox.exec(['sh', '-c', command], setup ? { purpose: 'setup' } : {});
  let out = '';
  for await (const chunk of proc.stdout) out += Buffer.from(chunk).toString('utf8');
  await proc.exit;
  return out;
}

describe('--secret on the seatbelt engine (stand-in sandbox-exec)', () => {
  it('the server holds the stand-in and trust files it may read but not write; curl through the session proxy gets the real value to the bound host', async () => {
    const env = Object.fromEntries(
      (await run('env'))
        .split('\n')
        .filter(Boolean)
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    ) as Record<string, string>;
    expect(env.GH_TOKEN).toBe(secret.standIn);
    expect(JSON.stringify(env)).not.toContain(REAL);
    for (const name of TRUST_VARS) expect(env[name]).toMatch(/\/trust\/(node|bundle)\.pem$/);
    const bundle = readFileSync(env.SSL_CERT_FILE as string, 'utf8');
    expect(bundle).toContain('-----BEGIN CERTIFICATE-----');
    const profile = parseProfile(readFileSync(join(env.TMPDIR as string, '.standin-profile.sb'), 'utf8'));
    const file = profilePath(env.SSL_CERT_FILE as string, 'trust');
    expect(decide(profile, { op: 'file-read-data', path: file }).action).toBe('allow');
    expect(decide(profile, { op: 'file-write-data', path: file }).action).toBe('deny');

    const reply = await run(`curl -sS -H "Authorization: Bearer $GH_TOKEN" https://${BOUND}/user 2>&1`);
    expect(reply).toBe('ok');
    expect(seen.at(-1)).toBe(`Bearer ${REAL}`);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'secret-substituted', name: 'GH_TOKEN', host: BOUND }),
    );
    expect(JSON.stringify(events)).not.toContain(REAL);
  });

  it('a setup step gets neither the stand-in, the session CA nor the substitution (its TLS to the bound host is end to end)', async () => {
    const env = await run('env', true);
    for (const name of [...TRUST_VARS, 'GH_TOKEN']) expect(env).not.toContain(`${name}=`);
    const before = seen.length;
    const reply = await run(
      `curl -sS --cacert ${upstreamCaFile} -H "Authorization: Bearer fixed-value" https://${BOUND}/setup 2>&1`,
      true,
    );
    expect(reply).toBe('ok');
    expect(seen.slice(before)).toEqual(['Bearer fixed-value']);
  });
});
