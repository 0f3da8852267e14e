/**
 * The egress proxy from the attacker's side, through the built binary: a sandboxed server with a
 * network grant, an upstream it chose, and the host's own services.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, traceRecords } from './helpers.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const NET_SERVER = fileURLToPath(new URL('./fixtures/net-server.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-egress-'));

interface Fetched {
  status?: number;
  statusText?: string;
  headers?: string[];
  body?: string;
  error?: string;
}

async function fetchThrough(
  args: string[],
  urls: string[],
): Promise<{ replies: Fetched[]; records: Array<Record<string, unknown>>; stderr: string }> {
  const trace = join(dir, `${randomUUID()}.jsonl`);
  const { client, stderr } = await connect([
    ...args,
    '--mount',
    `${REPO}:ro`,
    '--trace',
    trace,
    '--',
    'node',
    NET_SERVER,
  ]);
  const replies: Fetched[] = [];
  try {
    for (const url of urls) {
      const result = await client.callTool({ name: 'fetch', arguments: { url } }, undefined, {
        timeout: 25_000,
      });
      replies.push(JSON.parse((result.content as Array<{ text: string }>)[0]?.text ?? '{}') as Fetched);
    }
  } finally {
    await client.close();
  }
  // The trace is complete once the bridge has exited.
  for (let i = 0; i < 100 && !traceRecords(trace).some((r) => r.type === 'session-end'); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return { replies, records: traceRecords(trace), stderr: stderr() };
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a granted upstream that answers with malformed HTTP (issue 12, finding 1)', () => {
  // Each upstream port answers every request with these bytes and closes.
  const answers: Record<string, string> = {
    controlInStatusText: 'HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
    newlineTrickInStatusText: 'HTTP/1.1 200 OK\rX-Injected: yes\r\nContent-Length: 2\r\n\r\nok',
    statusOutOfRange: 'HTTP/1.1 999 Whatever\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
    controlInHeaderValue:
      'HTTP/1.1 200 OK\r\nX-Evil: a\x01b\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
    notHttp: 'SSH-2.0-OpenSSH_9.2\r\n',
  };
  const servers: Server[] = [];
  const ports: Record<string, number> = {};
  let good: HttpServer;
  let goodPort: number;

  beforeAll(async () => {
    for (const [name, bytes] of Object.entries(answers)) {
      const server = createServer((socket) => {
        socket.once('data', () => socket.end(Buffer.from(bytes, 'latin1')));
        socket.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      servers.push(server);
      ports[name] = (server.address() as { port: number }).port;
    }
    good = createHttpServer((_req, res) => res.end('still here'));
    await new Promise<void>((resolve) => good.listen(0, '127.0.0.1', resolve));
    goodPort = (good.address() as { port: number }).port;
  });

  afterAll(() => {
    for (const server of servers) server.close();
    good.close();
  });

  // Fails before the proxy checked upstream replies: the first reply's status text made
  // res.writeHead throw ERR_INVALID_CHAR in a callback and the bridge died with exit code 1.
  it('answers 502 for each, never copies their status text or headers, and the session goes on', async () => {
    const names = Object.keys(answers);
    const { replies, records, stderr } = await fetchThrough(
      ['--allow-net', '127.0.0.1'],
      [...names.map((name) => `http://127.0.0.1:${ports[name]}/`), `http://127.0.0.1:${goodPort}/`],
    );
    for (const [index, name] of names.entries()) {
      expect(replies[index]?.status, name).toBe(502);
      expect(replies[index]?.statusText, name).toBe('Bad Gateway');
      expect(JSON.stringify(replies[index]?.headers), name).not.toMatch(/X-Evil|X-Injected/i);
    }
    // The session went on: a good upstream is still reached afterwards, through the same proxy.
    expect(replies[names.length]).toMatchObject({ status: 200, body: 'still here' });
    const end = records.find((r) => r.type === 'session-end');
    expect(end).toMatchObject({ reason: 'client-eof', exitCode: 0 });
    expect(records.some((r) => r.type === 'bridge-crash')).toBe(false);
    expect(stderr).not.toContain('ERR_INVALID_CHAR');
    // The proxy said why, in the trace, without the upstream's bytes.
    const bad = records.filter((r) => r.type === 'sandbox.proxy' && r.decision === 'bad-upstream');
    expect(bad.length).toBe(names.length);
  });
});

/** This host's own addresses that are not loopback, as a hostile server would find them. */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .filter((entry) => !entry.internal && !(entry.family === 'IPv6' && entry.address.startsWith('fe80:')))
    .map((entry) => entry.address);
}

describe("--allow-net '*' and this host's own addresses (issue 11, finding 6)", () => {
  const banner = `host-service-${randomUUID()}`;
  let service: HttpServer;
  let port: number;
  const address = hostAddresses()[0];
  const url = () => `http://${address?.includes(':') ? `[${address}]` : address}:${port}/`;

  beforeAll(async () => {
    // A service of the host user's, listening on every interface (0.0.0.0 and ::).
    service = createHttpServer((_req, res) => res.end(banner));
    await new Promise<void>((resolve) => service.listen(0, '::', resolve));
    port = (service.address() as { port: number }).port;
  });

  afterAll(() => service.close());

  it('this machine has a non-loopback address to attack', () => {
    expect(address, 'no non-loopback interface address on this machine').toBeDefined();
  });

  it('control: without a sandbox the same server reaches the service', async () => {
    const { replies } = await fetchThrough(['--backend', 'none'], [url()]);
    expect(replies[0]).toMatchObject({ status: 200, body: banner });
  });

  // Fails before the proxy refused this host's own interface addresses: on a machine whose
  // address is not in a private range (here 192.0.2.2), '*' let the request through.
  it("refuses it under '*', and names why in the trace", async () => {
    const { replies, records } = await fetchThrough(['--allow-net', '*'], [url()]);
    expect(replies[0]?.status).toBe(403);
    expect(replies[0]?.body).not.toContain(banner);
    expect(records).toContainEqual(
      expect.objectContaining({
        type: 'sandbox.proxy',
        decision: 'deny',
        reason: expect.stringContaining("this host's own address"),
      }),
    );
  });

  it('reaches it when the grant names the IP itself', async () => {
    const grant = address?.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
    const { replies } = await fetchThrough(['--allow-net', grant], [url()]);
    expect(replies[0]).toMatchObject({ status: 200, body: banner });
  });
});
