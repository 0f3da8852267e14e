import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planTlsTrust } from '@mcpsandbox/host-side';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../src/index.js';
import { run } from './helpers.js';

// Under /tmp, which every sandbox hides: only the trust bind can make the file visible.
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-trust-'));
chmodSync(dir, 0o755);
const bundle = join(dir, 'company-ca.pem');
const PEM = '-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n';
writeFileSync(bundle, PEM);
// Writable by anyone on the host: only the read-only bind can refuse the sandbox's write.
chmodSync(bundle, 0o666);
const other = join(dir, 'other.txt');
writeFileSync(other, 'not part of the trust', { mode: 0o644 });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SHOW = String.raw`
const fs = require('node:fs');
const read = (p) => { try { return fs.readFileSync(p, 'utf8').length; } catch (e) { return e.code; } };
console.log(JSON.stringify({ env: process.env.NODE_EXTRA_CA_CERTS ?? null, ssl: process.env.SSL_CERT_FILE ?? null, bundle: read(process.argv[1]), other: read(process.argv[2]), write: (() => { try { fs.appendFileSync(process.argv[1], 'x'); return 'written'; } catch (e) { return e.code; } })() }));
`;

async function inside(hostTlsTrust: boolean | undefined) {
  const backend = createLocalBackend({
    hostEnv: { ...process.env, NODE_EXTRA_CA_CERTS: bundle, SSL_CERT_FILE: bundle },
    ...(hostTlsTrust === undefined ? {} : { hostTlsTrust }),
  });
  const box = await backend.create({ sessionId: 'trust', env: {}, ttlMs: 30_000 });
  try {
    const result = await run(box, ['node', '-e', SHOW, bundle, other]);
    return {
      describe: backend.describe?.() ?? '',
      got: JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}'),
    };
  } finally {
    await box.close();
  }
}

describe("the host's TLS trust", () => {
  it('crosses by default: the variables, and the files they name, read-only and nothing beside them', async () => {
    const { got, describe: line } = await inside(undefined);
    expect(got).toEqual({ env: bundle, ssl: bundle, bundle: PEM.length, other: 'ENOENT', write: 'EROFS' });
    expect(line).toContain('host TLS trust: NODE_EXTRA_CA_CERTS, SSL_CERT_FILE');
  });

  it('stays out with hostTlsTrust off (--no-host-tls-trust)', async () => {
    const { got, describe: line } = await inside(false);
    expect(got).toEqual({ env: null, ssl: null, bundle: 'ENOENT', other: 'ENOENT', write: 'ENOENT' });
    expect(line).not.toContain('TLS');
  });

  it('forwards only absolute paths that exist, and never a directory that holds a private root', () => {
    const plan = planTlsTrust(
      {
        NODE_EXTRA_CA_CERTS: 'relative.pem',
        SSL_CERT_FILE: join(dir, 'missing.pem'),
        SSL_CERT_DIR: '/etc:/home',
        REQUESTS_CA_BUNDLE: bundle,
        CURL_CA_BUNDLE: '/',
      },
      ['/home', '/tmp'],
    );
    expect(plan.entries.map((e) => e.name)).toEqual(['REQUESTS_CA_BUNDLE']);
    expect(planTlsTrust({ SSL_CERT_DIR: '/' }, ['/tmp']).entries).toEqual([]);
    expect(planTlsTrust({ SSL_CERT_DIR: tmpdir() }, [tmpdir()]).entries).toEqual([]);
    expect(plan.notes).toHaveLength(4);
  });
});
