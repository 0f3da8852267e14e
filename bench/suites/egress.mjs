// Egress latency inside one `local` sandbox: one HTTPS request on a new connection through the
// transparent path (the sandbox's DNS responder and :443 listener) against the same request
// through the proxy (CONNECT), to a local HTTPS server. The backend's test hooks say the name has
// a public address and connect that address to the local server, so the host's decision code
// runs as in production and nothing leaves this machine. Rounds alternate between the paths.
// `--secret`: in a second sandbox that binds a secret to one name, the first request to it (the
// session's one leaf certificate signed, one more TLS handshake on the host) and then requests on
// new connections to it against the same requests to a granted name that is not bound.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { createRequire } from 'node:module';
import { connect, Socket } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../lib/env.mjs';
import { median, round } from '../lib/stats.mjs';

const NAME = 'bench.egress.test';
const BOUND = 'bound.egress.test';
const PUBLIC = '93.184.216.34';

const CLIENT = String.raw`
const https = require('node:https');
const http = require('node:http');
const tls = require('node:tls');
const { performance } = require('node:perf_hooks');
const [name, rounds] = [process.argv[1], Number(process.argv[2])];
const proxy = new URL(process.env.HTTPS_PROXY);
const finish = (res, done) => { res.resume(); res.on('end', done); };
const transparent = () => new Promise((done, fail) => {
  https.get({ host: name, path: '/', agent: false }, (res) => finish(res, done)).on('error', fail);
});
const viaConnect = () => new Promise((done, fail) => {
  const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: name + ':443' });
  req.on('connect', (res, socket) => {
    if (res.statusCode !== 200) return fail(new Error('CONNECT ' + res.statusCode));
    https.get({ host: name, path: '/', agent: false, createConnection: () => tls.connect({ socket, servername: name }) }, (r) => finish(r, done)).on('error', fail);
  });
  req.on('error', fail);
  req.end();
});
(async () => {
  const samples = { transparent: [], connect: [] };
  for (let i = 0; i < rounds + 3; i++) {
    for (const [key, once] of [['transparent', transparent], ['connect', viaConnect]]) {
      const t = performance.now();
      await once();
      if (i >= 3) samples[key].push(performance.now() - t);
    }
  }
  console.log(JSON.stringify(samples));
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

export async function measureEgress({ rounds }) {
  const dir = mkdtempSync(join(os.tmpdir(), 'mcpsandbox-bench-egress-'));
  chmodSync(dir, 0o755);
  const file = (n) => join(dir, n);
  const ssl = (...args) => execFileSync('openssl', args, { stdio: 'pipe' });
  let server;
  try {
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=bench CA',
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.pem'),
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
    );
    ssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${NAME}`,
      '-keyout',
      file('key.pem'),
      '-out',
      file('csr.pem'),
    );
    writeFileSync(file('ext.cnf'), `subjectAltName=DNS:${NAME},DNS:${BOUND}\n`);
    ssl(
      'x509',
      '-req',
      '-in',
      file('csr.pem'),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      file('ext.cnf'),
      '-out',
      file('cert.pem'),
    );
    chmodSync(file('ca.pem'), 0o644);
    server = createServer(
      { key: readFileSync(file('key.pem')), cert: readFileSync(file('cert.pem')) },
      (_req, res) => res.end('ok'),
    );
    await new Promise((done) => server.listen(0, '127.0.0.1', done));
    const port = server.address().port;
    const require = createRequire(join(ROOT, 'apps', 'cli', 'package.json'));
    const { createLocalBackend } = await import(
      pathToFileURL(require.resolve('@mcpsandbox/backend-local')).href
    );
    const hooks = {
      resolve: async () => [PUBLIC],
      dial: (address, p) => {
        if (address === PUBLIC && p === 443) return connect({ host: '127.0.0.1', port, allowHalfOpen: true });
        const refused = new Socket();
        process.nextTick(() => refused.destroy(new Error('not the bench upstream')));
        return refused;
      },
    };
    const backend = createLocalBackend({
      hostEnv: { ...process.env, NODE_EXTRA_CA_CERTS: file('ca.pem') },
      ...hooks,
    });
    const box = await backend.create({
      sessionId: 'bench-egress',
      env: {},
      ttlMs: 120_000,
      network: { allow: [NAME] },
    });
    try {
      const proc = await box.exec(['node', '-e', CLIENT, NAME, String(rounds)]);
      const { out, err } = await outputOf(proc);
      const samples = JSON.parse(out.trim().split('\n').pop() || 'null');
      if (!samples) return { skipped: err.trim() || 'no samples' };
      const t = round(median(samples.transparent), 2);
      const c = round(median(samples.connect), 2);
      const secret = await measureSecret(require, hooks, file('ca.pem'), rounds);
      return { rounds, transparentMs: t, connectMs: c, addedMs: round(t - c, 2), secret };
    } finally {
      await box.close();
    }
  } catch (error) {
    return { skipped: error.message };
  } finally {
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const SECRET_CLIENT = String.raw`
const https = require('node:https');
const { performance } = require('node:perf_hooks');
const [bound, unbound, rounds, firstTo] = [process.argv[1], process.argv[2], Number(process.argv[3]), process.argv[4]];
const headers = { authorization: 'Bearer ' + process.env.BENCH_TOKEN };
const once = (host) => new Promise((done, fail) => {
  const t = performance.now();
  https.get({ host, path: '/', agent: false, headers }, (res) => {
    res.resume();
    res.on('end', () => done(performance.now() - t));
  }).on('error', fail);
});
(async () => {
  const first = await once(firstTo === 'unbound' ? unbound : bound);
  const samples = { bound: [], unbound: [] };
  for (let i = 0; i < rounds + 3; i++) {
    for (const [key, host] of [['bound', bound], ['unbound', unbound]]) {
      const ms = await once(host);
      if (i >= 3) samples[key].push(ms);
    }
  }
  console.log(JSON.stringify({ first, ...samples }));
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

/** A sandbox process's whole stdout and stderr (stdin closed at once), once it has exited. */
async function outputOf(proc) {
  const collect = async (stream) => {
    const chunks = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks).toString();
  };
  await proc.closeStdin();
  const [out, err] = await Promise.all([collect(proc.stdout), collect(proc.stderr), proc.exit]);
  return { out, err };
}

/**
 * Sandboxes with `--secret BENCH_TOKEN@bound…`: the first request of a fresh client process, to the
 * bound name in half the sessions and to the unbound one in the other half (a process's first
 * TLS request loads its trust store either way), medians over `sessions`; then, in the first
 * session, bound vs unbound `rounds` times.
 */
async function measureSecret(require, hooks, caFile, rounds, sessions = 20) {
  const { createLocalBackend } = await import(
    pathToFileURL(require.resolve('@mcpsandbox/backend-local')).href
  );
  const { bindSecret, parseSecretFlag } = await import(
    pathToFileURL(require.resolve('@mcpsandbox/core')).href
  );
  const firsts = { bound: [], unbound: [] };
  let samples;
  for (let session = 0; session < sessions; session++) {
    const firstTo = session % 2 === 0 ? 'bound' : 'unbound';
    const secret = bindSecret(parseSecretFlag(`BENCH_TOKEN@${BOUND}`), {
      BENCH_TOKEN: 'ghp_BenchValue0123456789abcdefghijklmnop',
    });
    const box = await createLocalBackend({
      // Merged into the sandbox's trust beside the session CA: the unbound name's TLS is end to end.
      hostEnv: { ...process.env, NODE_EXTRA_CA_CERTS: caFile },
      ...hooks,
      secretUpstreamCa: readFileSync(caFile, 'utf8'),
    }).create({
      sessionId: `bench-secret-${session}`,
      env: { BENCH_TOKEN: secret.standIn },
      ttlMs: 120_000,
      network: { allow: [NAME, BOUND], secrets: [secret] },
    });
    try {
      const proc = await box.exec([
        'node',
        '-e',
        SECRET_CLIENT,
        BOUND,
        NAME,
        String(session === 0 ? rounds : 0),
        firstTo,
      ]);
      const { out, err } = await outputOf(proc);
      const got = JSON.parse(out.trim().split('\n').pop() || 'null');
      if (!got) return { skipped: err.trim() || 'no samples' };
      firsts[firstTo].push(round(got.first, 2));
      if (session === 0) samples = got;
    } finally {
      await box.close();
    }
  }
  const bound = round(median(samples.bound), 2);
  const unbound = round(median(samples.unbound), 2);
  return {
    rounds,
    firstBoundMs: round(median(firsts.bound), 2),
    firstBoundSamplesMs: firsts.bound,
    firstUnboundMs: round(median(firsts.unbound), 2),
    firstUnboundSamplesMs: firsts.unbound,
    boundMs: bound,
    unboundMs: unbound,
    addedMs: round(bound - unbound, 2),
  };
}
