/**
 * `--secret` through the built binary: what the user can get wrong is refused with the reason,
 * and on `local` the server's environment holds a stand-in, never the value. (The substitution on
 * the wire is tested in a real sandbox in backend-local's secrets test, where the upstream's name
 * can be resolved to a local server.)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin, waitFor } from './helpers.js';

const IMPOSTOR = fileURLToPath(new URL('./fixtures/impostor-local-backend.mjs', import.meta.url));

const REAL = 'ghp_E2eRealValue0123456789abcdefREAL0001';
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-secrets-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', GH_TOKEN: REAL };

async function runBin(args: string[]) {
  const run = spawnBin(['run', ...args], env);
  run.child.stdin.end();
  return run.result;
}

describe('--secret on the command line', () => {
  it('refuses a value on the command line, with the reason, without echoing it', async () => {
    const result = await runBin(['--secret', `GH_TOKEN=${REAL}@api.github.com`, '--', 'true']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('values do not go on command lines');
    expect(result.stderr).not.toContain(REAL);
  });

  it.each([['none'], ['e2b'], ['vm']])('refuses backend %s with the alternative', async (backend) => {
    const result = await runBin([
      '--backend',
      backend,
      '--allow-net',
      'api.github.com',
      '--secret',
      'GH_TOKEN@api.github.com',
      '--',
      'true',
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--secret is not supported on backend \w+ .*--env GH_TOKEN/);
    expect(result.stderr).not.toContain(REAL);
  });

  it('refuses a custom backend module that calls itself local: the real value never reaches it', async () => {
    const record = join(dir, 'impostor-spec.json');
    const run = spawnBin(
      [
        'run',
        '--backend',
        IMPOSTOR,
        '--allow-net',
        'api.github.com',
        '--secret',
        'GH_TOKEN@api.github.com',
        '--',
        'true',
      ],
      { ...env, IMPOSTOR_RECORD: record },
    );
    run.child.stdin.end();
    const result = await run.result;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /--secret is not supported on backend .*impostor-local-backend.*--env GH_TOKEN/,
    );
    expect(() => readFileSync(record, 'utf8')).toThrow();
    expect(result.stderr).not.toContain(REAL);
  });

  it('refuses a bound host that is not granted, and a name also given with --env', async () => {
    const ungranted = await runBin(['--secret', 'GH_TOKEN@api.github.com', '--', 'true']);
    expect(ungranted.stderr).toContain('api.github.com is not granted; add --allow-net api.github.com');
    const both = await runBin([
      '--allow-net',
      'api.github.com',
      '--env',
      'GH_TOKEN',
      '--secret',
      'GH_TOKEN@api.github.com',
      '--',
      'true',
    ]);
    expect(both.stderr).toContain('choose one');
  });

  it('on local, the server holds a stand-in of the same form; neither it, stderr nor the trace sees the value', async () => {
    const trace = join(dir, 'trace.jsonl');
    // Stdin stays open, as a client's does, until the server has said what it holds.
    const run = spawnBin(
      [
        'run',
        '--allow-net',
        'api.github.com',
        '--secret',
        'GH_TOKEN@api.github.com',
        '--trace',
        trace,
        '--',
        'sh',
        '-c',
        'env | grep -E "^(GH_TOKEN|NODE_EXTRA_CA_CERTS)=" >&2; echo done >&2',
      ],
      env,
    );
    await waitFor(() => run.stderrSoFar().includes('done'), 30_000, 'the server environment');
    run.child.stdin.end();
    const result = await run.result;
    const standIn = /GH_TOKEN=(\S+)/.exec(result.stderr)?.[1];
    expect(standIn).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    expect(standIn).not.toBe(REAL);
    expect(result.stderr).toContain('NODE_EXTRA_CA_CERTS=/run/mcp-sandbox-trust/node.pem');
    expect(result.stderr).not.toContain(REAL);
    expect(result.stderr).not.toContain('which was withheld');
    expect(result.stderr).toContain(
      'secret GH_TOKEN: the server holds a stand-in; the real value goes only to api.github.com (request line and credential headers)',
    );
    expect(result.stdout.toString()).not.toContain(REAL);
    expect(readFileSync(trace, 'utf8')).not.toContain(REAL);
  });

  it('on local with E2B_API_KEY set (local is then wrapped for its fallback hint), --secret is still honoured', async () => {
    const run = spawnBin(
      [
        'run',
        '--allow-net',
        'api.github.com',
        '--secret',
        'GH_TOKEN@api.github.com',
        '--',
        'sh',
        '-c',
        'echo done >&2',
      ],
      { ...env, E2B_API_KEY: 'e2b_not_a_real_key_0000' },
    );
    await waitFor(() => run.stderrSoFar().includes('done'), 30_000, 'the server');
    run.child.stdin.end();
    const result = await run.result;
    expect(result.stderr).not.toContain('--secret is not supported');
    expect(result.code).toBe(0);
  });
});
