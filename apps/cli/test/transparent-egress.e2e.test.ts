import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, spawnBin } from './helpers.js';

// Wherever CI clones the repository (even under a hidden /tmp), the fixture is granted read-only.
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const SERVER = fileURLToPath(new URL('./fixtures/fetch-server.mjs', import.meta.url));
const REGISTRY = new URL(execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim());
const PING = new URL('-/ping', REGISTRY.href.endsWith('/') ? REGISTRY : `${REGISTRY.href}/`).href;
const HOST = REGISTRY.hostname;
// As a user's shell would have them: on a machine behind a TLS-inspecting proxy, the sandbox's
// TLS clients need the same trust as the host's.
const TRUST = Object.fromEntries(
  ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE']
    .filter((name) => process.env[name])
    .map((name) => [name, process.env[name] as string]),
);
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-egress-e2e-'));
chmodSync(dir, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function fetchPing(flags: string[], trace: string) {
  const session = await connect(
    ['--mount', `${REPO}:ro`, '--trace', trace, ...flags, '--', 'node', SERVER],
    TRUST,
  );
  try {
    const result = await session.client.callTool({ name: 'fetch', arguments: { url: PING } });
    const text = (result.content as Array<{ text: string }>)[0]?.text ?? '';
    return { text, isError: result.isError === true, stderr: session.stderr() };
  } finally {
    await session.client.close();
  }
}

describe('transparent egress through the built binary, against the real npm registry', () => {
  it('a server using the global fetch reaches the registry when granted, and is told the flag when not', async () => {
    const granted = await fetchPing(['--allow-net', HOST], join(dir, 'granted.jsonl'));
    expect(granted).toMatchObject({ isError: false, text: expect.stringMatching(/^200 /) });
    expect(granted.stderr).not.toContain('not granted');

    // No grant at all: still no network, but the refused lookup names the flag.
    const refused = await fetchPing([], join(dir, 'refused.jsonl'));
    expect(refused).toMatchObject({ isError: true, text: 'fetch failed: ENOTFOUND' });
    expect(refused.stderr).toContain(
      `mcp-sandbox: warning: the server tried ${HOST}, which is not granted; to allow it: --allow-net ${HOST}`,
    );

    const other = await fetchPing(['--allow-net', 'example.invalid'], join(dir, 'other.jsonl'));
    expect(other).toMatchObject({ isError: true, text: 'fetch failed: ENOTFOUND' });
    expect(other.stderr).toContain(
      `mcp-sandbox: warning: the server tried ${HOST}, which is not granted; to allow it: --allow-net ${HOST}`,
    );
  });

  it('trace --suggest on the refused session prints the grant, and granting it makes the session succeed', async () => {
    const trace = join(dir, 'suggest.jsonl');
    const first = await fetchPing([], trace);
    expect(first.isError).toBe(true);
    expect(readFileSync(trace, 'utf8')).toContain('"type":"sandbox.egress-denied"');

    const suggested = await spawnBin(['trace', trace, '--suggest']).result;
    expect(suggested.code).toBe(0);
    const flags = suggested.stdout.toString().trim().split('\n');
    expect(flags).toEqual([`--allow-net ${HOST}`]);

    const again = await fetchPing(
      flags.flatMap((line) => line.split(' ')),
      join(dir, 'suggested.jsonl'),
    );
    expect(again).toMatchObject({ isError: false, text: expect.stringMatching(/^200 /) });
  });
});

describe("the host's TLS trust through the built binary", () => {
  const bundle = join(dir, 'company-ca.pem');
  writeFileSync(bundle, 'a CA bundle\n');
  chmodSync(bundle, 0o644);
  const SHOW = `const fs=require('fs');let b;try{b=fs.readFileSync(process.env.NODE_EXTRA_CA_CERTS||'${bundle}','utf8').trim()}catch(e){b=e.code}console.error('inside: '+(process.env.NODE_EXTRA_CA_CERTS??'unset')+' '+b)`;
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', NODE_EXTRA_CA_CERTS: bundle };

  it('crosses by default, named on the start-up line; --no-host-tls-trust keeps it out', async () => {
    const on = spawnBin(['run', '--', 'node', '-e', SHOW], env);
    const shown = await on.result;
    expect(shown.stderr).toContain('host TLS trust: NODE_EXTRA_CA_CERTS');
    expect(shown.stderr).toContain(`inside: ${bundle} a CA bundle`);

    const off = spawnBin(['run', '--no-host-tls-trust', '--', 'node', '-e', SHOW], env);
    const hidden = await off.result;
    expect(hidden.stderr).not.toContain('host TLS trust');
    expect(hidden.stderr).toContain('inside: unset ENOENT');
  });
});
