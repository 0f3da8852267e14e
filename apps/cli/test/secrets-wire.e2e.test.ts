/**
 * `--secret` on the wire, through the built binary's `run`, on `local` and `srt`: the binary runs
 * in a network namespace of the test's own (`unshare --net --mount`), where the bound name
 * resolves (a hosts file bound over /etc/hosts) to a public-looking address on that namespace's
 * loopback, served by the test's HTTPS echo upstream. Nothing leaves this host.
 *
 * Inside the sandbox, Node (fetch and the `https` module), curl, and Python's requests and httpx
 * (from PyPI, pinned, in a venv the test builds: certifi users that trust the session CA through
 * REQUESTS_CA_BUNDLE / SSL_CERT_FILE) each call the upstream with the stand-in; the upstream sees
 * the real value. The sandbox never holds it: not in /proc/self/environ, not in a Node server's
 * memory read through /proc/<pid>/mem from inside, not in any byte written to the client, not in
 * the trace. Values seen inside are reported as SHA-256 hashes, so that the bridge's redaction
 * of stderr cannot be what hides one. A Node of 22.21 or later (installed beside the repo when the
 * runner's is older) makes plain `fetch` and `https` calls too, reaching the proxy by the
 * NODE_USE_ENV_PROXY the sandbox sets: on `srt`, which has no transparent path, that is the only
 * way a server's own `fetch` gets out.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { node22 } from './conformance-runner.js';
import { BIN, waitFor } from './helpers.js';
import { canUnshare, FIXTURES, inNamespace, makeUpstream, seenBy, type Upstream } from './secret-netns.js';

const HOST = 'api.wire.test';
const REAL = 'ghp_WireRealValue0123456789abcdefREAL0001';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** requests and httpx with every dependency, pinned (no resolver picks a version here). */
const PYPI = [
  'requests==2.32.3',
  'certifi==2024.8.30',
  'charset-normalizer==3.4.0',
  'idna==3.10',
  'urllib3==2.2.3',
  'httpx==0.28.1',
  'httpcore==1.0.7',
  'h11==0.14.0',
  'anyio==4.6.2.post1',
  'sniffio==1.3.1',
];

const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-secret-wire-'));
const venv = join(dir, 'venv');
let upstream: Upstream;
/** A Node that honours NODE_USE_ENV_PROXY, and the mount that shows it when it is not the runner's. */
let modern: { readonly node: string; readonly mount: readonly string[] };

beforeAll(async () => {
  if (!canUnshare) return;
  const node = await node22();
  modern =
    node === process.execPath
      ? { node: 'node', mount: [] }
      : { node, mount: ['--mount', `${dirname(dirname(node))}:${dirname(dirname(node))}:ro`] };
  upstream = await makeUpstream(dir, [HOST]);
  execFileSync('/usr/bin/python3', ['-m', 'venv', venv], { stdio: 'pipe' });
  execFileSync(join(venv, 'bin', 'pip'), ['install', '--quiet', '--no-deps', ...PYPI], {
    stdio: 'pipe',
    timeout: 240_000,
  });
}, 300_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface WireRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly seen: ReturnType<typeof seenBy>;
  readonly trace: string;
}

/**
 * One `run` in a fresh namespace pair: the clients, then the memory probe. `how` is `--secret`
 * (the feature) or `--env` (the control: the same probes must find the real value there).
 */
async function wireRun(backend: 'local' | 'srt', how: '--secret' | '--env' = '--secret'): Promise<WireRun> {
  const tag = `${backend}${how}`;
  const seenFile = join(dir, `seen-${tag}.jsonl`);
  const ready = join(dir, `ready-${tag}`);
  const trace = join(dir, `trace-${tag}.jsonl`);
  const run = inNamespace(upstream, seenFile, ready, [
    process.execPath,
    BIN,
    'run',
    '--backend',
    backend,
    '--allow-net',
    HOST,
    how,
    how === '--secret' ? `GH_TOKEN@${HOST}` : 'GH_TOKEN',
    '--mount',
    `${FIXTURES}:${FIXTURES}:ro`,
    '--mount',
    `${venv}:${venv}:ro`,
    ...modern.mount,
    '--trace',
    trace,
    '--',
    'sh',
    join(FIXTURES, 'clients.sh'),
    `https://${HOST}`,
    venv,
    // srt has no transparent path, and Node 20's fetch and https honour no proxy variable.
    backend === 'local' ? 'transparent' : 'proxy',
    modern.node,
  ]);
  const child = spawn(run.command, run.args, {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/',
      GH_TOKEN: REAL,
      // The bridge (not the sandbox) verifies the upstream against the test's CA.
      NODE_EXTRA_CA_CERTS: upstream.ca,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('latin1');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('latin1');
  });
  const closed = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  try {
    // Stdin stays open, as a client's does, until the clients are done.
    await waitFor(() => stderr.includes('CLIENTS DONE'), 120_000, `the clients on ${backend}`);
  } finally {
    child.stdin.end();
  }
  const code = await closed;
  const seen = seenBy(seenFile);
  return { code, stdout, stderr, seen, trace: existsSync(trace) ? readFileSync(trace, 'utf8') : '' };
}

/** The hashes the probes printed: `ENVIRON` (the shell's /proc/self/environ) and each `MEM` scan. */
function probes(stderr: string) {
  const environ = /ENVIRON GH_TOKEN sha256 ([0-9a-f]{64})/.exec(stderr)?.[1];
  const memory = (who: string) =>
    [...stderr.matchAll(new RegExp(`MEM ${who} token-sha256 ([0-9a-f]{64})`, 'g'))].map((m) => m[1]);
  const scanned = (who: string) => new RegExp(`MEM ${who} scanned`).test(stderr);
  return { environ, memory, scanned };
}

const CLIENTS = {
  local: ['fetch', 'https', 'modern-fetch', 'modern-https', 'curl', 'requests', 'httpx'],
  srt: ['https-proxy', 'modern-fetch', 'modern-https', 'curl', 'requests', 'httpx'],
} as const;
const PATHS = {
  local: [
    '/node-fetch',
    '/node-https',
    '/modern-fetch',
    '/modern-https',
    '/curl',
    '/requests',
    '/httpx',
    '/memory',
  ],
  srt: ['/node-https', '/modern-fetch', '/modern-https', '/curl', '/requests', '/httpx', '/memory'],
} as const;

describe.skipIf(!canUnshare)(
  '--secret on the wire through run (root: a network namespace of its own)',
  () => {
    it.each(['local', 'srt'] as const)(
      'on %s, Node, curl, requests and httpx send the stand-in; the upstream receives the real value; the sandbox never holds it',
      async (backend) => {
        const result = await wireRun(backend);
        for (const client of CLIENTS[backend]) {
          expect(result.stderr, client).toMatch(new RegExp(`CLIENT ${client} 200`));
        }
        expect(result.seen.map((s) => s.url)).toEqual(PATHS[backend]);
        for (const seen of result.seen) expect(seen.authorization).toBe(`Bearer ${REAL}`);
        // Inside: the environment and the server's memory (its own read, and another process's
        // read of it through /proc/<pid>/mem) hold the stand-in, never the value.
        const { environ, memory, scanned } = probes(result.stderr);
        expect(environ).toMatch(/^[0-9a-f]{64}$/);
        expect(environ).not.toBe(sha256(REAL));
        for (const who of ['server-self', 'server', 'self']) {
          expect(scanned(who), who).toBe(true);
          expect(memory(who), who).toContain(environ);
          expect(memory(who), who).not.toContain(sha256(REAL));
        }
        // Every byte the client got, everything said on stderr, and the trace.
        expect(result.stdout).not.toContain(REAL);
        expect(result.stderr).not.toContain(REAL);
        expect(result.trace).not.toContain(REAL);
        // One substitution recorded per request, by name, host and path.
        expect(result.trace.match(/"type":"sandbox\.secret-substituted","name":"GH_TOKEN"/g)).toHaveLength(
          PATHS[backend].length,
        );
        expect(result.code).not.toBeNull();
      },
      240_000,
    );

    it('the control: with --env, the same probes find the real value inside (so they would see a leak)', async () => {
      const result = await wireRun('local', '--env');
      const { environ, memory } = probes(result.stderr);
      expect(environ).toBe(sha256(REAL));
      expect(memory('server')).toContain(sha256(REAL));
      expect(result.seen.map((s) => s.authorization)).toContain(`Bearer ${REAL}`);
    }, 240_000);
  },
);
