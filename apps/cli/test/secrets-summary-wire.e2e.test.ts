/**
 * `--secret` on the wire through the built binary, in `run` and in `serve`: a server with a
 * stand-in calls a bound host and the host receives the real value; `mcp-sandbox trace` names each
 * substitution (secret, host, method, path) and never the value; serve gives each session its own
 * stand-in and substitutes for both. Only name resolution is the test's (a backend module that is
 * the binary's local backend with a resolver to an HTTPS upstream on loopback); the sandbox, the
 * proxy, the session CA and the substitution are the real ones.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, connect } from './helpers.js';
import { makeUpstream } from './secret-netns.js';
import { startServe, TOKEN } from './serve-helpers.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const BACKEND = fileURLToPath(new URL('./fixtures/bound-upstream-backend.mjs', import.meta.url));
const CALLER = fileURLToPath(new URL('./fixtures/secret-caller.mjs', import.meta.url));
const BOUND = 'api.bound.test';
const REAL = 'ghp_WireRealValue0123456789abcdefREAL01';

const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-secrets-wire-'));
chmodSync(dir, 0o755);
const received: Array<{ authorization: string; url: string }> = [];
let upstream: Server;
let env: Record<string, string>;

beforeAll(async () => {
  const ca = await makeUpstream(dir, [BOUND]);
  upstream = createServer({ key: readFileSync(ca.key), cert: readFileSync(ca.cert) }, (req, res) => {
    const authorization = String(req.headers.authorization ?? '');
    received.push({ authorization, url: req.url ?? '' });
    res.setHeader('connection', 'close');
    // Never echoes the value: a reply that did would be cut off.
    res.end(authorization === `Bearer ${REAL}` ? 'real value received' : 'something else received');
  });
  await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', done));
  env = {
    GH: REAL,
    MCPSANDBOX_TEST_BOUND_NAMES: BOUND,
    MCPSANDBOX_TEST_UPSTREAM_PORT: String((upstream.address() as { port: number }).port),
    MCPSANDBOX_TEST_UPSTREAM_CA: ca.ca,
  };
});
afterAll(() => {
  upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

const RUN_OPTIONS = [
  '--backend',
  BACKEND,
  '--mount',
  `${REPO}:ro`,
  '--allow-net',
  BOUND,
  '--secret',
  `GH@${BOUND}`,
];

type Caller = { callTool: (p: { name: string; arguments?: Record<string, unknown> }) => Promise<unknown> };
async function call(client: Caller, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }> };
  return result.content[0]?.text ?? '';
}

describe('--secret on the wire through the built binary', () => {
  it('run: the upstream gets the real value, the server only its stand-in, and trace names each substitution', async () => {
    const trace = join(dir, 'run.jsonl');
    const { client, stderr } = await connect(
      [...RUN_OPTIONS, '--trace', trace, '--', 'node', CALLER, 'GH'],
      env,
    );
    let held = '';
    try {
      held = await call(client, 'held');
      expect(await call(client, 'call', { url: `https://${BOUND}/user?per_page=1` })).toBe(
        '200 real value received',
      );
      expect(await call(client, 'call', { url: `https://${BOUND}/repos/o/r/issues` })).toBe(
        '200 real value received',
      );
    } finally {
      await client.close();
    }
    expect(held).toMatch(new RegExp(`^ghp_[A-Za-z0-9]{${REAL.length - 4}}$`));
    expect(held).not.toBe(REAL);
    expect(received.slice(-2).map((r) => r.authorization)).toEqual([`Bearer ${REAL}`, `Bearer ${REAL}`]);
    expect(stderr()).not.toContain(REAL);
    expect(readFileSync(trace, 'utf8')).not.toContain(REAL);

    const summary = execFileSync(process.execPath, [BIN, 'trace', trace], { encoding: 'utf8' });
    expect(summary).toContain('secrets (never the value):');
    expect(summary).toContain(`  GH: put on the wire in 2 request(s) to ${BOUND} (2)`);
    expect(summary).toContain(`    GET ${BOUND} /user`);
    expect(summary).toContain(`    GET ${BOUND} /repos/o/r/issues`);
    expect(summary).not.toContain('per_page');
    expect(summary).not.toContain(REAL);
    const json = JSON.parse(
      execFileSync(process.execPath, [BIN, 'trace', '--json', trace], { encoding: 'utf8' }),
    );
    expect(json.sessions[0].secrets.GH.substituted).toEqual({ [BOUND]: 2 });
  }, 60_000);

  it('serve: each session holds its own stand-in, and both are substituted', async () => {
    const served = await startServe(RUN_OPTIONS, ['node', CALLER, 'GH'], env);
    const open = async () => {
      const client = new Client({ name: 'wire-client', version: '1.0.0' }, { capabilities: {} });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(served.url), {
          requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
        }),
      );
      return client;
    };
    const before = received.length;
    try {
      const [a, b] = [await open(), await open()];
      const [heldA, heldB] = [await call(a, 'held'), await call(b, 'held')];
      expect(heldA).toMatch(/^ghp_/);
      expect(heldB).toMatch(/^ghp_/);
      expect(heldA).not.toBe(heldB);
      expect([heldA, heldB]).not.toContain(REAL);
      expect(await call(a, 'call', { url: `https://${BOUND}/a` })).toBe('200 real value received');
      expect(await call(b, 'call', { url: `https://${BOUND}/b` })).toBe('200 real value received');
      await Promise.all([a.close(), b.close()]);
    } finally {
      await served.stop();
    }
    expect(received.slice(before)).toEqual([
      { authorization: `Bearer ${REAL}`, url: '/a' },
      { authorization: `Bearer ${REAL}`, url: '/b' },
    ]);
    expect(served.stderr()).not.toContain(REAL);
  }, 90_000);
});
