/**
 * `--secret` on the wire: a real proxy, real TLS on loopback, upstreams with a test CA of their
 * own. The bound host's name resolves to a public-looking address that is dialled as the local
 * upstream (as the other egress tests do), so nothing leaves this host.
 */
import { once } from 'node:events';
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type Server } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { type BoundSecret, type HostName, parseHostName, type SandboxEvent } from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseGrant } from '../src/grants.js';
import { EgressProxy, type SecretRouting } from '../src/proxy.js';
import { SessionCa } from '../src/secrets/ca.js';
import { SecretReporter } from '../src/secrets/watch.js';

const API = parseHostName('api.example.test') as HostName;
const OTHER = parseHostName('other.example.test') as HostName;
const REAL = 'ghp_RealValue0123456789abcdefREALxyz0001';
const STAND = 'ghp_StandIn0123456789abcdefSTANDxyz0002';
const SECRET: BoundSecret = { name: 'GH_TOKEN', hosts: [API], body: false, value: REAL, standIn: STAND };
const BODY_SECRET: BoundSecret = {
  name: 'BODY_KEY',
  hosts: [API],
  body: true,
  value: 'sk-BodyReal0123456789abcdefghij',
  standIn: 'sk-BodyStnd0123456789abcdefghij',
};
/** A value with bytes that URL-encoding and JSON escape change, so each reflected form differs from it. */
const PUNCT: BoundSecret = {
  name: 'PUNCT_KEY',
  hosts: [API],
  body: false,
  value: 'pk/Real+Value"0123\\quote=4567&x',
  standIn: 'pk/Stnd+Value"8901\\quote=2345&y',
};

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}
const seen: Record<'api' | 'other' | 'plain', Seen[]> = { api: [], other: [], plain: [] };
/** What the api upstream answers: `ok`, or the request's Authorization echoed (a reflecting API). */
let apiMode:
  | 'ok'
  | 'reflect'
  | 'reflect-base64'
  | 'reflect-url'
  | 'reflect-json'
  | 'redirect'
  | 'gzip'
  | 'split'
  | 'chunked' = 'ok';
const servers: Server[] = [];
const ports = { api: 0, other: 0, plain: 0, proxy: 0 };
let upstreamCa: SessionCa;
let sessionCa: SessionCa;
const events: SandboxEvent[] = [];
const warnings: string[] = [];

function recording(
  key: keyof typeof seen,
  answer: (req: IncomingMessage, res: ServerResponse, body: string) => void,
) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('latin1');
      seen[key]!.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      answer(req, res, body);
    });
  };
}

async function listen(server: Server): Promise<number> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  upstreamCa = await SessionCa.create([API, OTHER]);
  sessionCa = await SessionCa.create([API]);
  ports.api = await listen(
    createHttpsServer(
      await upstreamCa.leaf(API),
      recording('api', (req, res) => {
        const auth = String(req.headers.authorization ?? '');
        if (apiMode === 'reflect') res.end(JSON.stringify({ youSent: auth }));
        else if (apiMode === 'reflect-base64') res.end(Buffer.from(auth).toString('base64'));
        else if (apiMode === 'reflect-url') res.end(`next=${encodeURIComponent(auth)}`);
        else if (apiMode === 'reflect-json')
          res.end(JSON.stringify({ youSent: auth.slice(7) }).replace(/\//g, '\\/'));
        else if (apiMode === 'chunked') {
          // Chunked encoding, the value cut into pieces: chunk-size lines fall inside it on the wire.
          const pieces = [auth.slice(0, 12), auth.slice(12, 20), auth.slice(20)];
          const next = () => {
            const piece = pieces.shift();
            if (piece === undefined) res.end();
            else {
              res.write(piece);
              setTimeout(next, 30);
            }
          };
          next();
        } else if (apiMode === 'redirect') {
          res.writeHead(302, { location: `https://${OTHER}:${ports.other}/moved` });
          res.end();
        } else if (apiMode === 'split') {
          // A large reply with the value cut in two across writes (and so across reads).
          res.write('a'.repeat(256 * 1024) + REAL.slice(0, 12));
          setTimeout(() => res.end(`${REAL.slice(12)} and more`), 100);
        } else if (apiMode === 'gzip') {
          res.writeHead(200, { 'content-encoding': 'gzip' });
          res.end('not really gzip');
        } else res.end('ok');
      }),
    ),
  );
  ports.other = await listen(
    createHttpsServer(
      await upstreamCa.leaf(OTHER),
      recording('other', (_q, res) => res.setHeader('connection', 'close').end('ok')),
    ),
  );
  ports.plain = await listen(createHttpServer(recording('plain', (_q, res) => res.end('ok'))));
  const reporter = new SecretReporter((line) => warnings.push(line));
  ports.proxy = await startProxy(
    ['api.example.test', 'other.example.test'],
    { bound: [SECRET, BODY_SECRET, PUNCT], ca: sessionCa, upstreamCa: upstreamCa.pem },
    (event) => {
      events.push(event);
      reporter.observe(event);
    },
  );
});

/** A proxy on loopback whose checked public address is dialled as the loopback upstream on the same port. */
async function startProxy(
  grants: readonly string[],
  secrets: SecretRouting,
  onEvent: (event: SandboxEvent) => void,
): Promise<number> {
  const proxy = new EgressProxy({
    grants: grants.map(parseGrant),
    resolve: async () => ['93.184.216.34'],
    dial: (_address, port) => connect({ host: '127.0.0.1', port }),
    onEvent,
    secrets,
  });
  const listener = (await import('node:net')).createServer();
  proxy.attach(listener);
  return listen(listener);
}
afterAll(() => {
  for (const server of servers) server.close();
});

function reset(): void {
  for (const key of ['api', 'other', 'plain'] as const) seen[key] = [];
  events.length = 0;
  warnings.length = 0;
  apiMode = 'ok';
}

/** CONNECT through the proxy to host:port, TLS as a client trusting `ca`, write `raw`, read until close or `responses` replies. */
async function viaTunnel(
  host: string,
  port: number,
  raw: string,
  ca: string,
  responses = 1,
  tlsOptions: { servername?: string; ALPNProtocols?: string[]; rejectUnauthorized?: boolean } = {},
): Promise<string> {
  const req = httpRequest({
    host: '127.0.0.1',
    port: ports.proxy,
    method: 'CONNECT',
    path: `${host}:${port}`,
  });
  req.end();
  const [res, socket] = (await once(req, 'connect')) as [IncomingMessage, import('node:net').Socket];
  if (res.statusCode !== 200) {
    socket.destroy();
    return `CONNECT ${res.statusCode}`;
  }
  const tls = tlsConnect({ socket, servername: host, ca, ...tlsOptions });
  return new Promise<string>((resolve) => {
    let text = '';
    const done = () => {
      tls.destroy();
      resolve(text);
    };
    tls.on('secureConnect', () => tls.write(raw, 'latin1'));
    tls.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if ((text.match(/\r\n0\r\n\r\n|Content-Length: 0\r\n\r\n/g) ?? []).length >= responses) done();
    });
    tls.on('error', (error: NodeJS.ErrnoException) => {
      text += `\nERROR ${error.code ?? error.message}`;
      done();
    });
    tls.on('close', done);
    setTimeout(done, 20_000);
  });
}

const get = (host: string, port: number, headers: string, target = '/user') =>
  `GET ${target} HTTP/1.1\r\nHost: ${host}:${port}\r\n${headers}\r\n`;

describe('--secret on the wire to a bound host', () => {
  it('the upstream sees the real value in Authorization (Bearer, token, Basic), X-Api-Key, Cookie and the query; the sandbox never does', async () => {
    reset();
    const basic = Buffer.from(`x-access-token:${STAND}`).toString('base64');
    const heads = [
      `Authorization: Bearer ${STAND}\r\n`,
      `Authorization: token ${STAND}\r\n`,
      `Authorization: Basic ${basic}\r\n`,
      `X-Api-Key: ${STAND}\r\n`,
      `Cookie: session=${STAND}; other=1\r\n`,
    ];
    const raw =
      heads.map((h) => get(API, ports.api, h)).join('') +
      get(API, ports.api, '', `/search?access_token=${STAND}`);
    const reply = await viaTunnel(API, ports.api, raw, sessionCa.pem, heads.length + 1);
    expect(seen.api.map((s) => s.headers.authorization)).toEqual([
      `Bearer ${REAL}`,
      `token ${REAL}`,
      `Basic ${Buffer.from(`x-access-token:${REAL}`).toString('base64')}`,
      undefined,
      undefined,
      undefined,
    ]);
    expect(seen.api[3]!.headers['x-api-key']).toBe(REAL);
    expect(seen.api[4]!.headers.cookie).toBe(`session=${REAL}; other=1`);
    expect(seen.api[5]!.url).toBe(`/search?access_token=${REAL}`);
    expect(reply).not.toContain(REAL);
    expect(JSON.stringify(events)).not.toContain(REAL);
    expect(events.filter((e) => e.type === 'secret-substituted')).toHaveLength(6);
    expect(events.find((e) => e.type === 'secret-substituted')).toEqual({
      type: 'secret-substituted',
      name: 'GH_TOKEN',
      host: API,
      method: 'GET',
      path: '/user',
    });
  });

  it('a body is substituted only for a secret that opted in; a stand-in in another body is misuse', async () => {
    reset();
    const body = `{"a":"${STAND}","b":"${BODY_SECRET.standIn}"}`;
    const raw = `POST /x HTTP/1.1\r\nHost: ${API}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    await viaTunnel(API, ports.api, raw, sessionCa.pem);
    expect(seen.api[0]!.body).toBe(`{"a":"${STAND}","b":"${BODY_SECRET.value}"}`);
    expect(events).toContainEqual({ type: 'secret-misuse', name: 'GH_TOKEN', host: API, where: 'body' });
    expect(warnings.join('\n')).toContain('the server sent the stand-in for GH_TOKEN in a request body');
  });

  it('a stand-in in a header that carries no credential is not replaced', async () => {
    reset();
    await viaTunnel(API, ports.api, get(API, ports.api, `X-Note: ${STAND}\r\n`), sessionCa.pem);
    expect(seen.api[0]!.headers['x-note']).toBe(STAND);
    expect(events).toContainEqual({ type: 'secret-misuse', name: 'GH_TOKEN', host: API, where: 'header' });
  });
});

describe('--secret attacks', () => {
  it('a granted host that is not bound gets the stand-in, end to end TLS untouched', async () => {
    reset();
    await viaTunnel(
      OTHER,
      ports.other,
      get(OTHER, ports.other, `Authorization: Bearer ${STAND}\r\n`),
      upstreamCa.pem,
    );
    expect(seen.other[0]!.headers.authorization).toBe(`Bearer ${STAND}`);
    expect(JSON.stringify(seen)).not.toContain(REAL);
  });

  it('a client that does not speak TLS to the bound host (or pins its certificate) fails at once, with the --env hint', async () => {
    reset();
    const pinned = await viaTunnel(
      API,
      ports.api,
      get(API, ports.api, `Authorization: Bearer ${STAND}\r\n`),
      upstreamCa.pem,
    );
    expect(pinned).toMatch(/ERROR/);
    expect(seen.api).toEqual([]);
    // The proxy learns of the failed handshake when the client's alert or close arrives.
    for (let i = 0; i < 200 && !events.some((e) => e.type === 'secret-tls-failed'); i++) {
      await new Promise((done) => setTimeout(done, 50));
    }
    expect(events).toContainEqual({ type: 'secret-tls-failed', host: API, port: ports.api });
    expect(warnings.join('\n')).toContain('for such a server pass the variable with --env instead');
  });

  it('an upstream this host does not trust (a machine in the middle) never gets the real value', async () => {
    reset();
    const failures: SandboxEvent[] = [];
    const saved = ports.proxy;
    // The proxy of a real session: no test CA for upstreams, only this host's own trust.
    ports.proxy = await startProxy(['api.example.test'], { bound: [SECRET], ca: sessionCa }, (event) =>
      failures.push(event),
    );
    try {
      const reply = await viaTunnel(
        API,
        ports.api,
        get(API, ports.api, `Authorization: Bearer ${STAND}\r\n`),
        sessionCa.pem,
      );
      expect(reply).not.toMatch(/^HTTP\/1\.1 200/);
    } finally {
      ports.proxy = saved;
    }
    expect(seen.api).toEqual([]);
    expect(failures.map((event) => event.type)).toContain('egress-failed');
  });

  it('an ungranted host is refused', async () => {
    reset();
    expect(
      await viaTunnel('evil.example.test', ports.other, get('evil.example.test', 1, ''), upstreamCa.pem),
    ).toBe('CONNECT 403');
  });

  it('plain HTTP to the bound host carries the stand-in, and it is recorded as misuse', async () => {
    reset();
    const req = httpRequest({
      host: '127.0.0.1',
      port: ports.proxy,
      path: `http://${API}:${ports.plain}/user`,
      headers: { authorization: `Bearer ${STAND}` },
    });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    res.resume();
    await once(res, 'end');
    expect(seen.plain[0]!.headers.authorization).toBe(`Bearer ${STAND}`);
    expect(events).toContainEqual({ type: 'secret-misuse', name: 'GH_TOKEN', where: 'plain-http' });
    expect(warnings.join('\n')).toContain('in a plain-HTTP request: not replaced');
  });

  it('a stand-in in a host name is recorded as misuse and never resolved to the real value', async () => {
    reset();
    const reply = await viaTunnel(`${STAND}.example.test`, 443, '', upstreamCa.pem);
    expect(reply).toMatch(/^CONNECT 40[03]$/);
    expect(events).toContainEqual({ type: 'secret-misuse', name: 'GH_TOKEN', where: 'connect-target' });
  });

  it('an upstream that reflects the real value is cut off (as is, and base64)', async () => {
    for (const mode of ['reflect', 'reflect-base64'] as const) {
      reset();
      apiMode = mode;
      const reply = await viaTunnel(
        API,
        ports.api,
        get(API, ports.api, `Authorization: Bearer ${STAND}\r\n`),
        sessionCa.pem,
      );
      expect(seen.api).toHaveLength(1);
      expect(reply).not.toContain(REAL);
      expect(reply).not.toContain(Buffer.from(`Bearer ${REAL}`).toString('base64').slice(12, 40));
      expect(events).toContainEqual({
        type: 'secret-reply-cut',
        host: API,
        reason: 'the reply carried the real value',
        name: 'GH_TOKEN',
      });
    }
  });

  it('an upstream that reflects the real value URL-encoded or JSON-escaped is cut off', async () => {
    for (const mode of ['reflect-url', 'reflect-json'] as const) {
      reset();
      apiMode = mode;
      const reply = await viaTunnel(
        API,
        ports.api,
        get(API, ports.api, `Authorization: Bearer ${PUNCT.standIn}\r\n`),
        sessionCa.pem,
      );
      expect(seen.api[0]!.headers.authorization).toBe(`Bearer ${PUNCT.value}`);
      expect(reply).not.toContain('Real');
      expect(events).toContainEqual({
        type: 'secret-reply-cut',
        host: API,
        reason: 'the reply carried the real value',
        name: 'PUNCT_KEY',
      });
    }
  });

  it('a real value cut across chunks of a chunked reply (chunk-size lines between its pieces) is cut off', async () => {
    reset();
    apiMode = 'chunked';
    const reply = await viaTunnel(
      API,
      ports.api,
      get(API, ports.api, `Authorization: Bearer ${STAND}\r\n`),
      sessionCa.pem,
    );
    expect(seen.api).toHaveLength(1);
    expect(reply).not.toContain('RealValue');
    expect(events.some((e) => e.type === 'secret-reply-cut')).toBe(true);
  });

  it('a real value split across two writes of a large reply is still caught before any of it is sent', async () => {
    reset();
    apiMode = 'split';
    const reply = await viaTunnel(
      API,
      ports.api,
      get(API, ports.api, `Authorization: Bearer ${STAND}\r\n`),
      sessionCa.pem,
    );
    expect(reply.length).toBeGreaterThan(100 * 1024);
    expect(reply).not.toContain(REAL.slice(0, 12));
    expect(events.some((e) => e.type === 'secret-reply-cut')).toBe(true);
  });

  it('a compressed reply, which cannot be searched, is cut off', async () => {
    reset();
    apiMode = 'gzip';
    await viaTunnel(API, ports.api, get(API, ports.api, `Authorization: Bearer ${STAND}\r\n`), sessionCa.pem);
    expect(seen.api[0]!.headers['accept-encoding']).toBe('identity');
    expect(events.some((e) => e.type === 'secret-reply-cut')).toBe(true);
  });

  it('a redirect to another host: the client follows with the stand-in, which the other host gets as is', async () => {
    reset();
    apiMode = 'redirect';
    const reply = await viaTunnel(
      API,
      ports.api,
      get(API, ports.api, `Authorization: Bearer ${STAND}\r\n`),
      sessionCa.pem,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 302/);
    const location = /location: (\S+)/i.exec(reply)![1]!;
    const url = new URL(location);
    await viaTunnel(
      url.hostname,
      Number(url.port),
      get(url.hostname, Number(url.port), `Authorization: Bearer ${STAND}\r\n`, url.pathname),
      upstreamCa.pem,
    );
    expect(seen.other[0]!.headers.authorization).toBe(`Bearer ${STAND}`);
    expect(JSON.stringify(seen.other)).not.toContain(REAL);
  });

  describe('request smuggling', () => {
    const hidden = `GET /admin HTTP/1.1\r\nHost: ${API}\r\nAuthorization: Bearer ${STAND}\r\n\r\n`;
    const cases: Array<[string, string]> = [
      [
        'Transfer-Encoding and Content-Length',
        `POST /a HTTP/1.1\r\nHost: ${API}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${hidden}`,
      ],
      [
        'two Content-Length',
        `POST /a HTTP/1.1\r\nHost: ${API}\r\nContent-Length: 0\r\nContent-Length: ${hidden.length}\r\n\r\n${hidden}`,
      ],
      ['obs-fold', `GET /a HTTP/1.1\r\nHost: ${API}\r\nX-A: 1\r\n Authorization: Bearer ${STAND}\r\n\r\n`],
      ['a bare LF', `GET /a HTTP/1.1\nHost: ${API}\r\nAuthorization: Bearer ${STAND}\r\n\r\n`],
      ['a bare CR', `GET /a HTTP/1.1\r\nHost: ${API}\rX: 1\r\nAuthorization: Bearer ${STAND}\r\n\r\n`],
      [
        'a Transfer-Encoding other than chunked',
        `POST /a HTTP/1.1\r\nHost: ${API}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
      ],
      [
        'an absolute-form target for another host',
        `GET https://${OTHER}/ HTTP/1.1\r\nHost: ${API}\r\nAuthorization: Bearer ${STAND}\r\n\r\n`,
      ],
      [
        'a Host header for another host',
        `GET / HTTP/1.1\r\nHost: ${OTHER}\r\nAuthorization: Bearer ${STAND}\r\n\r\n`,
      ],
      [
        'two Host headers',
        `GET / HTTP/1.1\r\nHost: ${API}\r\nHost: ${OTHER}\r\nAuthorization: Bearer ${STAND}\r\n\r\n`,
      ],
    ];
    it.each(cases)('%s: refused with 400, nothing reaches the upstream', async (_name, raw) => {
      reset();
      const reply = await viaTunnel(API, ports.api, raw, sessionCa.pem);
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(seen.api).toEqual([]);
    });

    it('an HTTP/2 preface on a bound connection is refused; nothing reaches the upstream', async () => {
      reset();
      const preface = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
      const reply = await viaTunnel(API, ports.api, preface, sessionCa.pem);
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(seen.api).toEqual([]);
    });

    it('a client that offers only h2 is refused at the handshake (ALPN offers http/1.1 alone)', async () => {
      reset();
      const reply = await viaTunnel(API, ports.api, get(API, ports.api, ''), sessionCa.pem, 1, {
        ALPNProtocols: ['h2'],
      });
      expect(reply).toMatch(/ERROR/);
      expect(seen.api).toEqual([]);
    });

    it('an SNI naming another host (the Host header the bound one or not) is refused', async () => {
      for (const hostHeader of [API, OTHER]) {
        reset();
        const raw = `GET /user HTTP/1.1\r\nHost: ${hostHeader}\r\nAuthorization: Bearer ${STAND}\r\n\r\n`;
        const reply = await viaTunnel(API, ports.api, raw, sessionCa.pem, 1, {
          servername: OTHER,
          rejectUnauthorized: false,
        });
        expect(reply).toMatch(/^HTTP\/1\.1 400 /);
        expect(seen.api).toEqual([]);
        expect(seen.other).toEqual([]);
        expect(events).toContainEqual({
          type: 'secret-request-refused',
          host: API,
          reason: 'SNI is not the bound host',
        });
      }
    });

    it('a stand-in in the SNI is recorded as misuse, and the connection refused', async () => {
      reset();
      const reply = await viaTunnel(API, ports.api, get(API, ports.api, ''), sessionCa.pem, 1, {
        servername: `${STAND.toLowerCase().replace(/_/g, '-')}.example.test`,
        rejectUnauthorized: false,
      });
      expect(reply).toMatch(/^HTTP\/1\.1 400 /);
      expect(seen.api).toEqual([]);
      expect(events).toContainEqual({ type: 'secret-misuse', name: 'GH_TOKEN', host: API, where: 'sni' });
    });

    it('two requests in one write: each is checked, the second for another host is refused', async () => {
      reset();
      const raw =
        get(API, ports.api, `Authorization: Bearer ${STAND}\r\n`) +
        get(OTHER, ports.other, `Authorization: Bearer ${STAND}\r\n`);
      const reply = await viaTunnel(API, ports.api, raw, sessionCa.pem, 2);
      expect(seen.api).toHaveLength(1);
      expect(reply).toContain('HTTP/1.1 400 Bad Request');
      expect(reply).not.toContain(REAL);
    });
  });
});
