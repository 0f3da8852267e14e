/**
 * `mcp-sandbox trace` summarises egress per host, through the built binary: what the grants let
 * through, what they refused and why, and a granted host this machine could not reach.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, connect, traceRecords } from './helpers.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const NET_SERVER = fileURLToPath(new URL('./fixtures/net-server.mjs', import.meta.url));
const FETCH_SERVER = fileURLToPath(new URL('./fixtures/fetch-server.mjs', import.meta.url));
const UNREACHABLE = 'api.example.invalid';
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-trace-egress-'));
let upstream: Server;
let port: number;
/** A port on this host nothing listens on: granted (as 127.0.0.1), refused by the kernel. */
let closed: number;

beforeAll(async () => {
  upstream = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  port = (upstream.address() as { port: number }).port;
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closed = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
});
afterAll(() => {
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One session of `server`, calling `fetch` on each URL; the tool results' texts and stderr. */
async function session(
  server: string,
  trace: string,
  urls: string[],
): Promise<string[] & { stderr?: string }> {
  const { client, stderr } = await connect([
    '--mount',
    `${REPO}:ro`,
    '--allow-net',
    '127.0.0.1',
    '--allow-net',
    UNREACHABLE,
    '--trace',
    trace,
    '--',
    'node',
    server,
  ]);
  const texts: string[] & { stderr?: string } = [];
  try {
    for (const url of urls) {
      const result = await client.callTool({ name: 'fetch', arguments: { url } }, undefined, {
        timeout: 25_000,
      });
      texts.push((result.content as Array<{ text: string }>)[0]?.text ?? '');
    }
  } finally {
    await client.close();
  }
  for (let i = 0; i < 100 && !traceRecords(trace).some((r) => r.type === 'session-end'); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  texts.stderr = stderr();
  return texts;
}

function summary(trace: string, json = false): string {
  return execFileSync(process.execPath, [BIN, 'trace', trace, ...(json ? ['--json'] : [])], {
    encoding: 'utf8',
  });
}

describe('trace: egress per host', () => {
  it('a granted host the host side cannot reach: the tool says fetch failed, and trace shows the failure and why', async () => {
    const trace = join(dir, 'unreachable.jsonl');
    const texts = await session(FETCH_SERVER, trace, [
      `https://${UNREACHABLE}/v1`,
      `https://${UNREACHABLE}/v2`,
    ]);
    // What the server sees: a connection that went nowhere, twice.
    expect(texts[0]).toMatch(/^fetch failed/);
    expect(texts[1]).toMatch(/^fetch failed/);
    // What the user sees: one line, once for the host, with the host side's reason.
    const said = (texts.stderr ?? '').split('\n').filter((l) => l.includes('granted but unreachable'));
    expect(said).toEqual([
      expect.stringMatching(
        /^mcp-sandbox: warning: api\.example\.invalid is granted but unreachable from this host: it does not resolve here \([A-Z_]+\)$/,
      ),
    ]);
    const out = summary(trace);
    expect(out).toMatch(
      new RegExp(
        `^egress:\\n {2}${UNREACHABLE.replace(/\./g, '\\.')} {2}allowed 0, denied 0, failed 2 \\(cannot resolve: [A-Z_]+\\)$`,
        'm',
      ),
    );
    const [json] = (JSON.parse(summary(trace, true)) as { sessions: Array<{ egress: unknown }> }).sessions;
    expect(json?.egress).toEqual({
      [UNREACHABLE]: {
        allowed: 0,
        denied: 0,
        failed: 2,
        reasons: [expect.stringMatching(/^cannot resolve: /)],
      },
    });
  });

  it('allowed, denied and failed attempts through the proxy are counted per host, with the reason of each refusal', async () => {
    const trace = join(dir, 'mixed.jsonl');
    const replies = await session(NET_SERVER, trace, [
      `http://127.0.0.1:${port}/`,
      `http://127.0.0.1:${port}/again`,
      'http://not-granted.example.com/',
      `http://${UNREACHABLE}/`,
      `http://127.0.0.1:${closed}/`,
    ]);
    // Control: each attempt really went out and got the answer the counts say.
    expect(replies.map((r) => (JSON.parse(r) as { status?: number }).status)).toEqual([
      200, 200, 403, 403, 502,
    ]);
    const [s] = (
      JSON.parse(summary(trace, true)) as {
        sessions: Array<{
          egress: Record<string, { allowed: number; denied: number; failed: number; reasons: string[] }>;
        }>;
      }
    ).sessions;
    expect(s?.egress['127.0.0.1']).toEqual({ allowed: 3, denied: 0, failed: 1, reasons: ['ECONNREFUSED'] });
    expect(s?.egress['not-granted.example.com']).toEqual({
      allowed: 0,
      denied: 1,
      failed: 0,
      reasons: ['not granted'],
    });
    expect(s?.egress[UNREACHABLE]).toMatchObject({ allowed: 0, denied: 0, failed: 1 });
    const out = summary(trace);
    expect(out).toContain('not-granted.example.com  allowed 0, denied 1, failed 0 (not granted)');
    expect(out).toMatch(/127\.0\.0\.1 +allowed 3, denied 0, failed 1 \(ECONNREFUSED\)$/m);
    // The refused connect after an allow is said on stderr, once, with its code.
    const said = (replies.stderr ?? '').split('\n').filter((l) => l.includes('granted but unreachable'));
    expect(said).toContain(
      `mcp-sandbox: warning: 127.0.0.1 is granted but unreachable from this host: connecting to it port ${closed} failed: ECONNREFUSED`,
    );
  });
});
