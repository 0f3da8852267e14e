import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A registry over real TLS with a certificate only its own file trusts, asked by a fresh node
// (Node's default store is fixed at start: NODE_EXTRA_CA_CERTS must be set when node starts).
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-registry-tls-'));
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');
const PIN = new URL('../dist/npx-pin.js', import.meta.url).href;
const AGENT = new URL('../dist/registry-agent.js', import.meta.url).href;
let server: Server;
let registry: string;

beforeAll(async () => {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'pipe' },
  );
  const packument = {
    'dist-tags': { latest: '1.0.0' },
    versions: { '1.0.0': { dist: { integrity: `sha512-${Buffer.alloc(64, 7).toString('base64')}` } } },
  };
  server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(packument));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  registry = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(() => {
  server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * resolveFromRegistry in a new node, with `caFiles`, and NODE_EXTRA_CA_CERTS as given; with
 * `shared`, three questions through one registryAgent (as the vouch of an install asks them).
 */
function resolveIn(caFiles: string[], extra?: string, shared = false): Promise<string> {
  const script = `import { resolveFromRegistry } from ${JSON.stringify(PIN)};
    import { registryAgent } from ${JSON.stringify(AGENT)};
    const [registry, files, shared] = process.argv.slice(1);
    const trust = { caFiles: JSON.parse(files) };
    const ask = (via) => resolveFromRegistry(registry, 'pkg', { kind: 'tag', value: 'latest' }, via);
    const answer = shared === 'shared'
      ? registryAgent(registry, trust, 2).then((agent) =>
          Promise.all([1, 2, 3].map(() => ask({ agent }))).then((r) => r[2]).finally(() => agent.close()))
      : ask({ trust });
    answer.then((r) => console.log(r.version), (e) => console.log('failed: ' + e.message));`;
  const env = { PATH: process.env.PATH ?? '', ...(extra ? { NODE_EXTRA_CA_CERTS: extra } : {}) };
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script, registry, JSON.stringify(caFiles), shared ? 'shared' : ''],
      { env },
      (error, stdout) => (error ? reject(error) : resolve(stdout.trim())),
    );
  });
}

describe('a pin check over TLS trusts exactly Node roots and the CA files npm trusts', () => {
  it('reaches a registry its CA file trusts, whether or not this node loaded that file at start', async () => {
    // The default store holds the file: no certificate list is handed to TLS.
    expect(await resolveIn([cert], cert)).toBe('1.0.0');
    // It does not: the list holds Node's roots and the file.
    expect(await resolveIn([cert])).toBe('1.0.0');
  });

  it('refuses the registry when no CA file names its certificate (control)', async () => {
    expect(await resolveIn([])).toMatch(/^failed: .*(self.signed|certificate)/i);
  });

  it('questions through one shared agent trust the same: its CA file reached, no CA file refused', async () => {
    expect(await resolveIn([cert], undefined, true)).toBe('1.0.0');
    expect(await resolveIn([cert], cert, true)).toBe('1.0.0');
    expect(await resolveIn([], undefined, true)).toMatch(/^failed: .*(self.signed|certificate)/i);
  });
});
