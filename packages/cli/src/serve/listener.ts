import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '@mcpsandbox/core';
import { MCP_PATH } from './endpoint.js';
import { type BearerToken, checkOrigin, checkToken, HttpRefusal, readBody } from './guard.js';
import { SESSION_HEADER, type SessionTable } from './sessions.js';
import { checkStatelessHeaders, isStateless, type StatelessPool } from './stateless.js';
import { jsonRpcError, sendJson } from './streams.js';
import type { Message, StartLink } from './upstream.js';

export interface ListenerOptions {
  readonly token: BearerToken;
  readonly maxBodyBytes: number;
  /** Most connections open at once; past it a new one is closed as it comes in. */
  readonly maxConnections: number;
  readonly sessions: SessionTable;
  readonly stateless: StatelessPool;
  /** Starts the server side of a new session (a sandbox of its own, or a port on the shared one). */
  readonly startSession: StartLink;
  readonly logger: Logger;
}

/**
 * The Streamable HTTP endpoint. Every request passes the same gate first, in this order: Host
 * and Origin (403), the bearer token (401), then the body limit (413); only then is anything
 * parsed or any sandbox started.
 */
export function createListener(options: ListenerOptions): Server {
  const server = createServer(
    {
      headersTimeout: HEADERS_DEADLINE_MS,
      // Until the request is whole (head and body), not the response: SSE streams stay open.
      requestTimeout: REQUEST_DEADLINE_MS,
      keepAliveTimeout: KEEP_ALIVE_MS,
      // How often the deadlines above are checked (Node's default is 30 s).
      connectionsCheckingInterval: 1_000,
    },
    (req, res) => {
      handle(req, res, options, server).catch((error: unknown) => refuse(res, error, options.logger));
    },
  );
  server.maxConnections = options.maxConnections;
  closeSilentConnections(server, HEADERS_DEADLINE_MS);
  return server;
}

/**
 * Node's header deadline only counts once a request's first line has arrived: a connection that
 * sends nothing (or a byte) would stay for ever. Each connection must complete a request head
 * within `ms` of opening and of each response it got; while a request is served, no deadline.
 */
function closeSilentConnections(server: Server, ms: number): void {
  const timers = new WeakMap<Socket, NodeJS.Timeout>();
  const arm = (socket: Socket) => {
    clearTimeout(timers.get(socket));
    timers.set(
      socket,
      setTimeout(() => socket.destroy(), ms),
    );
  };
  server.on('connection', (socket: Socket) => {
    arm(socket);
    socket.once('close', () => clearTimeout(timers.get(socket)));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    clearTimeout(timers.get(req.socket));
    res.once('finish', () => {
      if (!req.socket.destroyed) arm(req.socket);
    });
  });
}

/** A request head must arrive within this (slow headers hold a connection, token or not). */
const HEADERS_DEADLINE_MS = 10_000;
/** A whole request, head and body, must arrive within this: loopback has no slow uploads. */
const REQUEST_DEADLINE_MS = 15_000;
/** An idle keep-alive connection is closed after this. */
const KEEP_ALIVE_MS = 5_000;

async function handle(req: IncomingMessage, res: ServerResponse, o: ListenerOptions, server: Server) {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  checkOrigin(req, port);
  checkToken(req, o.token);
  const path = (req.url ?? '').split('?')[0];
  if (path !== MCP_PATH) throw new HttpRefusal(404, `Not Found: the endpoint is ${MCP_PATH}`);
  const sessionId = headerOf(req, SESSION_HEADER);
  if (req.method === 'POST') return post(req, res, o, sessionId);
  if (req.method === 'GET' || req.method === 'DELETE') {
    // Without a session these are not part of the stateless revision: it is POST only.
    if (sessionId === undefined) {
      throw new HttpRefusal(405, 'Method Not Allowed: without a session, only POST', { allow: 'POST' });
    }
    const session = o.sessions.get(sessionId);
    if (!session) throw new HttpRefusal(404, 'Not Found: no such session; initialize a new one');
    if (req.method === 'DELETE') {
      session.close();
      res.writeHead(204).end();
      return;
    }
    if (!(req.headers.accept ?? '').includes('text/event-stream')) {
      throw new HttpRefusal(406, 'Not Acceptable: a GET stream needs Accept: text/event-stream');
    }
    session.listen(res, headerOf(req, 'last-event-id'));
    return;
  }
  throw new HttpRefusal(405, 'Method Not Allowed', { allow: 'GET, POST, DELETE' });
}

async function post(req: IncomingMessage, res: ServerResponse, o: ListenerOptions, sessionId?: string) {
  const message = parseMessage(await readBody(req, o.maxBodyBytes));
  if (sessionId !== undefined) {
    const session = o.sessions.get(sessionId);
    if (!session) throw new HttpRefusal(404, 'Not Found: no such session; initialize a new one');
    session.post(message, req, res);
    return;
  }
  if (message.method === 'initialize') {
    // Each initialize opens a session of its own: it can never take over another client's.
    o.sessions.open(o.startSession).post(message, req, res);
    return;
  }
  if (isStateless(message, req)) {
    checkStatelessHeaders(message, req);
    o.stateless.post(message, req, res);
    return;
  }
  throw new HttpRefusal(400, `Bad Request: send initialize first, or an ${SESSION_HEADER} header`);
}

function parseMessage(body: Buffer): Message {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpRefusal(400, 'Parse error: the body is not JSON', {}, -32700);
  }
  if (Array.isArray(value))
    throw new HttpRefusal(400, 'Bad Request: JSON-RPC batches are not supported', {}, -32600);
  if (value === null || typeof value !== 'object' || (value as Message).jsonrpc !== '2.0') {
    throw new HttpRefusal(400, 'Bad Request: the body is not a JSON-RPC 2.0 message', {}, -32600);
  }
  return value as Message;
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

function refuse(res: ServerResponse, error: unknown, logger: Logger): void {
  const refusal =
    error instanceof HttpRefusal ? error : new HttpRefusal(500, 'Internal Server Error', {}, -32603);
  if (!(error instanceof HttpRefusal)) logger.error(`serve: ${(error as Error)?.message ?? String(error)}`);
  // A refused request's body is not read further: the connection is closed rather than drained,
  // so that a client (with the token or not) cannot hold it by trickling what follows.
  const headers = { ...refusal.headers, connection: 'close' };
  sendJson(res, refusal.status, jsonRpcError(null, refusal.rpcCode, refusal.message), headers);
}
