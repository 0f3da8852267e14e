/**
 * A small fake of E2B for offline tests: the control-plane REST API (create, kill, timeout,
 * connect, network) and envd inside each "VM" (health, file upload, and the Connect-RPC process
 * service with the JSON codec the SDK uses). Processes are real local child processes, so a real
 * MCP server can run behind it. It is not a sandbox: everything runs as the test user. Exported as
 * `@mcpsandbox/backend-e2b/testing` so that tools built on this backend can test offline too.
 *
 * Sandbox paths map into a temporary root per sandbox (`/home/user` is `<root>/home/user`, and HOME
 * points there). Relative paths and `$HOME` work as in a VM; in command arguments only the text
 * `/home/user` is rewritten to that root, other absolute paths are the host's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';

export const FAKE_API_KEY = 'e2b_fake_key_for_tests';
/** Recent enough for stdin close (0.5.2) and octet-stream uploads (0.5.7). */
export const FAKE_ENVD_VERSION = '0.6.3';
/** The first envd that runs a process as its default user when the request names none. */
const ENVD_DEFAULT_USER = '0.4.0';
/** The first envd that reads the `stdin` field of a process start (before, stdin is always a pipe). */
const ENVD_STDIN_FIELD = '0.3.0';

export interface FakeCreateRequest {
  readonly templateID?: string;
  readonly metadata?: Record<string, string>;
  readonly envVars?: Record<string, string>;
  readonly timeout?: number;
  readonly allow_internet_access?: boolean;
  readonly network?: { allowOut?: string[]; denyOut?: string[] };
  readonly [key: string]: unknown;
}

/**
 * What a compromised envd (root in the VM, or a template the attacker built) can send. Each attack
 * hits the next started process whose command line (`cmd` and `args` joined by spaces) contains
 * `match`, once.
 */
export interface HostileEnvd {
  readonly match: string;
  /** Sent on the process stream right after its start event. */
  readonly frame?: HostileFrame;
  /** Fields that replace those of the process's end event. */
  readonly end?: { readonly exitCode?: number; readonly exited?: boolean; readonly status?: string };
  /** Ends the stream with this Connect error instead of an end event, as soon as it started. */
  readonly streamError?: { readonly code: string; readonly message: string };
  /** Answers every unary call about the process (SendInput, CloseStdin, SendSignal) with a body this large. */
  readonly unaryBodyBytes?: number;
}

export type HostileFrame =
  /** A frame header declaring `declared` bytes, then only `send` bytes, and the stream stays open. */
  | { readonly kind: 'declared-length'; readonly declared: number; readonly send: number }
  /** One complete frame whose payload is a JSON array of `bytes` bytes (`[0,0,0,…]`). */
  | { readonly kind: 'json-array'; readonly bytes: number }
  /** One well-formed data event carrying `bytes` bytes of output. */
  | { readonly kind: 'data'; readonly stream: 'stdout' | 'stderr'; readonly bytes: number }
  /** `text` as output, in well-formed data events of `bytesPerFrame` bytes each (1: one frame a byte). */
  | {
      readonly kind: 'output';
      readonly stream: 'stdout' | 'stderr';
      readonly text: string;
      readonly bytesPerFrame: number;
    };

/** A process start as envd saw it, with the egress rules in force at that moment. */
export interface FakeStart {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly envs: Readonly<Record<string, string>>;
  readonly user: string | undefined;
  /** The request's `stdin` field as sent (undefined: left out, which envd reads as "a pipe"). */
  readonly stdin: unknown;
  /** Whether the process got a stdin pipe. */
  readonly stdinPipe: boolean;
  readonly network: unknown;
}

export interface FakeSandbox {
  readonly id: string;
  readonly root: string;
  readonly home: string;
  readonly create: FakeCreateRequest;
  readonly accessToken: string;
  /** Every PUT /network body, in order. */
  readonly networkUpdates: unknown[];
  /** Every timeout (seconds) set after creation. */
  readonly timeouts: number[];
  /** Every process start, in order. */
  readonly starts: FakeStart[];
  alive: boolean;
  readonly processes: Map<number, FakeProcess>;
  expiry: NodeJS.Timeout | undefined;
}

interface FakeProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly config: { cmd: string; args: string[]; envs: Record<string, string>; cwd?: string };
  readonly streams: Set<ServerResponse>;
  stdinOpen: boolean;
  outputCancelled: boolean;
  ended: boolean;
  hostile: HostileEnvd | undefined;
}

export interface FakeE2B {
  readonly apiUrl: string;
  readonly sandboxUrl: string;
  readonly sandboxes: ReadonlyMap<string, FakeSandbox>;
  /** Every API request as `METHOD path`, in order. */
  readonly requests: readonly string[];
  /** The next `times` create calls answer `status` with `message`. */
  failCreate(status: number, message: string, times?: number): void;
  /** Drops every open process stream of a sandbox at the socket level; processes keep running. */
  dropStreams(sandboxId: string): void;
  /** What E2B does when a sandbox's timeout elapses: the VM and its connections are gone. */
  expire(sandboxId: string): void;
  /** Arms an attack from a compromised envd (see {@link HostileEnvd}). */
  attack(hostile: HostileEnvd): void;
  /** Called when a sandbox is created, before the API answers (after the host planned its mounts). */
  onCreate(listener: ((box: FakeSandbox) => void) | undefined): void;
  /** Called on every network update, before the API answers. */
  onNetworkUpdate(listener: ((box: FakeSandbox, body: unknown) => void) | undefined): void;
  close(): Promise<void>;
}

export interface FakeE2BOptions {
  readonly apiKey?: string;
  /**
   * The envd version every sandbox reports, and behaves as: before 0.4.0 a process start must name
   * its user (`Authorization: Basic`, as the SDK sends) and an upload its `username`; before 0.3.0
   * the `stdin` field is ignored (stdin is always a pipe).
   */
  readonly envdVersion?: string;
}

export async function startFakeE2B(options: FakeE2BOptions = {}): Promise<FakeE2B> {
  const apiKey = options.apiKey ?? FAKE_API_KEY;
  const envdVersion = options.envdVersion ?? FAKE_ENVD_VERSION;
  const older = (than: string) => compareVersions(envdVersion, than) < 0;
  const sandboxes = new Map<string, FakeSandbox>();
  const requests: string[] = [];
  const createFailures: { status: number; message: string }[] = [];
  const attacks: HostileEnvd[] = [];
  let createListener: ((box: FakeSandbox) => void) | undefined;
  let networkListener: ((box: FakeSandbox, body: unknown) => void) | undefined;

  const expire = (box: FakeSandbox) => {
    if (!box.alive) return;
    box.alive = false;
    clearTimeout(box.expiry);
    for (const proc of box.processes.values()) {
      for (const res of proc.streams) res.socket?.destroy();
      proc.streams.clear();
      killTree(proc, 'SIGKILL');
    }
    setTimeout(() => rmSync(box.root, { recursive: true, force: true }), 1000).unref();
  };

  const api = createServer((req, res) => {
    void handleApi(req, res).catch((error: unknown) =>
      sendJson(res, 500, { code: 500, message: String(error) }),
    );
  });

  async function handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.push(`${req.method} ${url.pathname}`);
    const body = await readBody(req);
    if (req.headers['x-api-key'] !== apiKey) {
      return sendJson(res, 401, { code: 401, message: 'Invalid API key' });
    }
    if (req.method === 'POST' && url.pathname === '/v2/sandboxes') {
      const failure = createFailures.shift();
      if (failure) {
        return sendJson(res, failure.status, { code: failure.status, message: failure.message });
      }
      const create = JSON.parse(body.toString() || '{}') as FakeCreateRequest;
      const template = create.templateID ?? 'base';
      if (template !== 'base' && !template.startsWith('fake-')) {
        return sendJson(res, 404, { code: 404, message: `template '${template}' not found` });
      }
      const id = `fake${randomBytes(8).toString('hex')}`;
      const root = mkdtempSync(join(tmpdir(), 'fake-e2b-'));
      const home = join(root, 'home', 'user');
      mkdirSync(home, { recursive: true });
      const box: FakeSandbox = {
        id,
        root,
        home,
        create,
        accessToken: randomUUID(),
        networkUpdates: [],
        timeouts: [],
        starts: [],
        alive: true,
        processes: new Map(),
        expiry: undefined,
      };
      armExpiry(box, create.timeout ?? 300);
      sandboxes.set(id, box);
      createListener?.(box);
      return sendJson(res, 201, {
        sandboxID: id,
        templateID: template,
        clientID: 'fake',
        envdVersion,
        envdAccessToken: box.accessToken,
        domain: null,
      });
    }
    const match = /^\/(?:v2\/)?sandboxes\/([^/]+)(?:\/([a-z]+))?$/.exec(url.pathname);
    const box = match ? sandboxes.get(match[1] ?? '') : undefined;
    if (!match || !box?.alive) {
      return sendJson(res, 404, { code: 404, message: `sandbox not found` });
    }
    const action = match[2];
    if (req.method === 'DELETE' && !action) {
      expire(box);
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && action === 'timeout') {
      const { timeout } = JSON.parse(body.toString()) as { timeout: number };
      box.timeouts.push(timeout);
      armExpiry(box, timeout);
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'PUT' && action === 'network') {
      const update: unknown = JSON.parse(body.toString());
      box.networkUpdates.push(update);
      networkListener?.(box, update);
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && action === 'connect') {
      return sendJson(res, 200, {
        sandboxID: box.id,
        templateID: box.create.templateID ?? 'base',
        clientID: 'fake',
        envdVersion,
        envdAccessToken: box.accessToken,
        domain: null,
      });
    }
    if (req.method === 'GET' && !action) {
      return sendJson(res, 200, {
        sandboxID: box.id,
        templateID: box.create.templateID ?? 'base',
        clientID: 'fake',
        metadata: box.create.metadata ?? {},
        envdVersion,
        startedAt: new Date().toISOString(),
        endAt: new Date().toISOString(),
        state: 'running',
        cpuCount: 2,
        memoryMB: 512,
        diskSizeMB: 1024,
      });
    }
    return sendJson(res, 404, { code: 404, message: `no route ${req.method} ${url.pathname}` });
  }

  function armExpiry(box: FakeSandbox, seconds: number) {
    clearTimeout(box.expiry);
    box.expiry = setTimeout(() => expire(box), seconds * 1000);
    box.expiry.unref();
  }

  const envd = createServer((req, res) => {
    void handleEnvd(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { code: 'internal', message: String(error) });
      else res.destroy();
    });
  });

  async function handleEnvd(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const box = sandboxes.get(String(req.headers['e2b-sandbox-id'] ?? ''));
    // The edge answers 502 for a sandbox that no longer runs; the SDK reads that as "gone".
    if (!box?.alive) {
      await readBody(req);
      res.writeHead(502, { 'content-type': 'text/plain' }).end('The sandbox was not found');
      return;
    }
    if (url.pathname === '/health') {
      res.writeHead(204).end();
      return;
    }
    if (req.headers['x-access-token'] !== box.accessToken) {
      await readBody(req);
      return sendJson(res, 401, { code: 'unauthenticated', message: 'bad access token' });
    }
    if (req.method === 'POST' && url.pathname === '/files') {
      if (older(ENVD_DEFAULT_USER) && !url.searchParams.get('username')) {
        await readBody(req);
        return sendJson(res, 400, { code: 400, message: 'no user specified' });
      }
      return upload(box, req, res, url);
    }
    if (req.method !== 'POST' || !url.pathname.startsWith('/process.Process/')) {
      await readBody(req);
      return sendJson(res, 404, { code: 'unimplemented', message: `fake envd has no ${url.pathname}` });
    }
    const method = url.pathname.slice('/process.Process/'.length);
    const body = await readBody(req);
    if (method === 'Start' || method === 'Connect') {
      const message = JSON.parse(unenvelope(body).toString()) as Record<string, unknown>;
      // An old envd runs a process as the user the request names, and has no default.
      if (method === 'Start' && older(ENVD_DEFAULT_USER) && !basicUser(req.headers.authorization)) {
        return sendJson(res, 401, { code: 'unauthenticated', message: 'no user specified' });
      }
      const interval = Number(req.headers['keepalive-ping-interval'] ?? 0);
      return method === 'Start'
        ? startProcess(box, message, req, res, interval)
        : connectProcess(box, message, res, interval);
    }
    const message = JSON.parse(body.toString() || '{}') as Record<string, unknown>;
    if (method === 'List') {
      return sendJson(res, 200, {
        processes: [...box.processes.values()].map((p) => ({ config: p.config, pid: p.pid })),
      });
    }
    const proc = box.processes.get(selectorPid(message));
    if (!proc || proc.ended) return sendJson(res, 404, { code: 'not_found', message: 'process not found' });
    if (proc.hostile?.unaryBodyBytes !== undefined) {
      return sendLargeJson(res, proc.hostile.unaryBodyBytes);
    }
    if (method === 'SendInput') {
      const input = (message.input as { stdin?: string } | undefined)?.stdin ?? '';
      if (!proc.stdinOpen)
        return sendJson(res, 400, { code: 'failed_precondition', message: 'stdin closed' });
      const stdin = proc.child.stdin!;
      if (!stdin.write(Buffer.from(input, 'base64'))) {
        await new Promise<void>((resolve) => {
          stdin.once('drain', resolve);
          stdin.once('close', resolve);
        });
      }
      return sendJson(res, 200, {});
    }
    if (method === 'CloseStdin') {
      proc.stdinOpen = false;
      proc.child.stdin?.end();
      return sendJson(res, 200, {});
    }
    if (method === 'SendSignal') {
      const signal = message.signal === 'SIGNAL_SIGTERM' || message.signal === 15 ? 'SIGTERM' : 'SIGKILL';
      // envd stops forwarding output once it sends SIGTERM or SIGKILL itself.
      proc.outputCancelled = true;
      proc.child.kill(signal);
      return sendJson(res, 200, {});
    }
    return sendJson(res, 404, { code: 'unimplemented', message: `fake envd has no ${method}` });
  }

  function startProcess(
    box: FakeSandbox,
    message: Record<string, unknown>,
    req: IncomingMessage,
    res: ServerResponse,
    keepaliveSeconds: number,
  ) {
    const config = message.process as {
      cmd: string;
      args?: string[];
      envs?: Record<string, string>;
      cwd?: string;
    };
    const timeoutMs = Number(req.headers['connect-timeout-ms'] ?? 0);
    const commandLine = [config.cmd, ...(config.args ?? [])].join(' ');
    const attackIndex = attacks.findIndex((a) => commandLine.includes(a.match));
    const hostile = attackIndex >= 0 ? attacks.splice(attackIndex, 1)[0] : undefined;
    // envd reads a start without `stdin` as "give it a pipe"; before 0.3.0 it always gives one.
    const stdinPipe = older(ENVD_STDIN_FIELD) || message.stdin !== false;
    box.starts.push({
      cmd: config.cmd,
      args: config.args ?? [],
      envs: config.envs ?? {},
      user: basicUser(req.headers.authorization),
      stdin: message.stdin,
      stdinPipe,
      network: box.networkUpdates.at(-1) ?? {
        allow_internet_access: box.create.allow_internet_access,
        network: box.create.network,
      },
    });
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: box.home,
      USER: 'user',
      LOGNAME: 'user',
      ...(box.create.envVars ?? {}),
      ...(config.envs ?? {}),
    };
    // Only where `/home/user` starts a path, so a path already under the root is left alone.
    const args = (config.args ?? []).map((arg) =>
      arg.replace(/(^|[\s'"=:])\/home\/user(?=\/|$|[\s'"])/g, (_, lead: string) => `${lead}${box.home}`),
    );
    const child = spawn(config.cmd, args, {
      cwd: config.cwd ? mapPath(box, config.cwd) : box.home,
      env,
      stdio: [stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdin?.on('error', () => {});
    child.once('error', () => {
      sendStreamError(res, 'invalid_argument', `cannot start ${config.cmd}`);
    });
    child.once('spawn', () => {
      const pid = child.pid as number;
      const proc: FakeProcess = {
        child,
        pid,
        config: {
          cmd: config.cmd,
          args: config.args ?? [],
          envs: config.envs ?? {},
          ...(config.cwd ? { cwd: config.cwd } : {}),
        },
        streams: new Set(),
        stdinOpen: stdinPipe,
        outputCancelled: false,
        ended: false,
        hostile,
      };
      box.processes.set(pid, proc);
      openStream(res);
      attach(proc, res, keepaliveSeconds);
      writeEvent(res, { start: { pid } });
      if (hostile?.streamError) {
        proc.outputCancelled = true;
        proc.streams.delete(res);
        sendStreamError(res, hostile.streamError.code, hostile.streamError.message);
      }
      if (hostile?.frame) void sendHostileFrame(res, hostile.frame);
      const forward = (name: 'stdout' | 'stderr') => (chunk: Buffer) => {
        if (proc.outputCancelled) return;
        // No subscriber, no delivery: like envd, output produced while detached is lost.
        for (const stream of proc.streams) {
          if (!writeEvent(stream, { data: { [name]: chunk.toString('base64') } })) {
            child.stdout?.pause();
            child.stderr?.pause();
            stream.once('drain', () => {
              child.stdout?.resume();
              child.stderr?.resume();
            });
          }
        }
      };
      child.stdout?.on('data', forward('stdout'));
      child.stderr?.on('data', forward('stderr'));
      const timer = timeoutMs > 0 ? setTimeout(() => killTree(proc, 'SIGKILL'), timeoutMs) : undefined;
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        proc.ended = true;
        box.processes.delete(pid);
        const status = signal ? `signal: ${GO_SIGNAL_NAMES[signal] ?? signal}` : `exit status ${code}`;
        const end: Record<string, unknown> = {
          exitCode: signal ? -1 : (code ?? -1),
          exited: !signal,
          status,
        };
        if (signal || code !== 0) end.error = status;
        Object.assign(end, hostile?.end);
        for (const stream of proc.streams) {
          writeEvent(stream, { end });
          endStream(stream);
        }
        proc.streams.clear();
      });
    });
  }

  function connectProcess(
    box: FakeSandbox,
    message: Record<string, unknown>,
    res: ServerResponse,
    keepalive: number,
  ) {
    const proc = box.processes.get(selectorPid(message));
    openStream(res);
    if (!proc) {
      sendStreamError(res, 'not_found', 'process not found');
      return;
    }
    attach(proc, res, keepalive);
    writeEvent(res, { start: { pid: proc.pid } });
  }

  function attach(proc: FakeProcess, res: ServerResponse, keepaliveSeconds: number) {
    proc.streams.add(res);
    const keepalive =
      keepaliveSeconds > 0
        ? setInterval(() => writeEvent(res, { keepalive: {} }), keepaliveSeconds * 1000)
        : undefined;
    res.once('close', () => {
      clearInterval(keepalive);
      proc.streams.delete(res);
    });
  }

  async function upload(box: FakeSandbox, req: IncomingMessage, res: ServerResponse, url: URL) {
    const body = await readBody(req);
    const type = String(req.headers['content-type'] ?? '');
    const files: { path: string; data: Buffer }[] = [];
    if (type.startsWith('application/octet-stream')) {
      files.push({ path: url.searchParams.get('path') ?? '', data: body });
    } else {
      const form = await new Response(body, { headers: { 'content-type': type } }).formData();
      for (const [, value] of form.entries()) {
        if (typeof value === 'string') continue;
        files.push({ path: value.name, data: Buffer.from(await value.arrayBuffer()) });
      }
    }
    const written = files.map(({ path, data }) => {
      const target = mapPath(box, path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, data);
      return { name: posix.basename(path), type: 'file', path: sandboxPath(path) };
    });
    sendJson(res, 200, written);
  }

  await Promise.all([listen(api), listen(envd)]);
  return {
    apiUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
    sandboxUrl: `http://127.0.0.1:${(envd.address() as AddressInfo).port}`,
    sandboxes,
    requests,
    failCreate(status, message, times = 1) {
      for (let i = 0; i < times; i++) createFailures.push({ status, message });
    },
    dropStreams(sandboxId) {
      const box = sandboxes.get(sandboxId);
      for (const proc of box?.processes.values() ?? []) {
        for (const res of proc.streams) res.socket?.destroy();
        proc.streams.clear();
      }
    },
    expire(sandboxId) {
      const box = sandboxes.get(sandboxId);
      if (box) expire(box);
    },
    attack(hostile) {
      attacks.push(hostile);
    },
    onCreate(listener) {
      createListener = listener;
    },
    onNetworkUpdate(listener) {
      networkListener = listener;
    },
    async close() {
      for (const box of sandboxes.values()) expire(box);
      api.closeAllConnections();
      envd.closeAllConnections();
      await Promise.all([new Promise((r) => api.close(r)), new Promise((r) => envd.close(r))]);
      for (const box of sandboxes.values()) rmSync(box.root, { recursive: true, force: true });
    },
  };
}

/** Go's names for signals, as envd reports them in "signal: <name>". */
const GO_SIGNAL_NAMES: Record<string, string> = {
  SIGHUP: 'hangup',
  SIGINT: 'interrupt',
  SIGQUIT: 'quit',
  SIGABRT: 'aborted',
  SIGKILL: 'killed',
  SIGSEGV: 'segmentation fault',
  SIGPIPE: 'broken pipe',
  SIGTERM: 'terminated',
};

function killTree(proc: FakeProcess, signal: NodeJS.Signals) {
  try {
    process.kill(-proc.pid, signal);
  } catch {
    proc.child.kill(signal);
  }
}

function basicUser(header: string | undefined): string | undefined {
  const encoded = /^Basic (.+)$/.exec(header ?? '')?.[1];
  return encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString().split(':')[0];
}

/** Writes `bytes` bytes in pieces, honouring backpressure, until done or the peer goes away. */
async function writeFiller(res: ServerResponse, bytes: number, piece: Buffer): Promise<boolean> {
  let left = bytes;
  while (left > 0) {
    if (res.destroyed || res.writableEnded) return false;
    const chunk = left >= piece.length ? piece : piece.subarray(0, left);
    left -= chunk.length;
    if (!res.write(chunk)) {
      const go = await new Promise<boolean>((resolve) => {
        res.once('drain', () => resolve(true));
        res.once('close', () => resolve(false));
      });
      if (!go) return false;
    }
  }
  return true;
}

const FILLER_PIECE = 1024 * 1024;

async function sendHostileFrame(res: ServerResponse, frame: HostileFrame): Promise<void> {
  const head = Buffer.alloc(5);
  if (frame.kind === 'declared-length') {
    head.writeUInt32BE(frame.declared >>> 0, 1);
    res.write(head);
    await writeFiller(res, frame.send, Buffer.alloc(FILLER_PIECE, 0x20));
    return; // and the stream stays open, as if the rest were on its way
  }
  if (frame.kind === 'json-array') {
    head.writeUInt32BE(frame.bytes, 1);
    res.write(Buffer.concat([head, Buffer.from('[0')]));
    const ok = await writeFiller(res, frame.bytes - 3, Buffer.from(',0'.repeat(FILLER_PIECE / 2)));
    if (ok) res.write(']');
    return;
  }
  if (frame.kind === 'output') return sendOutputFrames(res, frame);
  const prefix = Buffer.from(`{"event":{"data":{"${frame.stream}":"`);
  const suffix = Buffer.from('"}}}');
  const base64 = Math.ceil(frame.bytes / 3) * 4;
  head.writeUInt32BE(prefix.length + base64 + suffix.length, 1);
  res.write(Buffer.concat([head, prefix]));
  if (await writeFiller(res, base64, Buffer.alloc(FILLER_PIECE, 'A'))) res.write(suffix);
}

/** Well-formed data events, written in batches with backpressure. */
async function sendOutputFrames(
  res: ServerResponse,
  frame: Extract<HostileFrame, { kind: 'output' }>,
): Promise<void> {
  const bytes = Buffer.from(frame.text);
  const step = Math.max(1, frame.bytesPerFrame);
  let batch: Buffer[] = [];
  let size = 0;
  for (let at = 0; at < bytes.length; at += step) {
    batch.push(
      envelope(0, { event: { data: { [frame.stream]: bytes.subarray(at, at + step).toString('base64') } } }),
    );
    size += (batch.at(-1) as Buffer).length;
    if (size < FILLER_PIECE && at + step < bytes.length) continue;
    if (res.destroyed || res.writableEnded) return;
    if (!res.write(Buffer.concat(batch, size))) {
      const go = await new Promise<boolean>((resolve) => {
        res.once('drain', () => resolve(true));
        res.once('close', () => resolve(false));
      });
      if (!go) return;
    }
    batch = [];
    size = 0;
  }
}

function compareVersions(a: string, b: string): number {
  const parse = (v: string) => v.split(/[.-]/).map((part) => Number.parseInt(part, 10) || 0);
  const [x, y] = [parse(a), parse(b)];
  for (let i = 0; i < 3; i++) {
    const diff = (x[i] ?? 0) - (y[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** A 200 answer to a unary call whose JSON body is `bytes` long. */
function sendLargeJson(res: ServerResponse, bytes: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(bytes) });
  res.write('{"x":"');
  return writeFiller(res, bytes - 8, Buffer.alloc(FILLER_PIECE, 'A')).then((ok) => {
    if (ok) res.end('"}');
  });
}

function sandboxPath(path: string): string {
  return path.startsWith('/') ? posix.normalize(path) : posix.join('/home/user', path);
}

function mapPath(box: FakeSandbox, path: string): string {
  return join(box.root, sandboxPath(path));
}

function selectorPid(message: Record<string, unknown>): number {
  const selector = message.process as { pid?: number } | undefined;
  return Number(selector?.pid ?? -1);
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

// Connect streaming framing: 1 flag byte (0x02 = end of stream), 4 bytes big-endian length, payload.
function envelope(flags: number, payload: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(payload));
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

function unenvelope(body: Buffer): Buffer {
  if (body.length < 5) return Buffer.from('{}');
  return body.subarray(5, 5 + body.readUInt32BE(1));
}

function openStream(res: ServerResponse) {
  res.writeHead(200, { 'content-type': 'application/connect+json' });
}

function writeEvent(res: ServerResponse, event: unknown): boolean {
  if (res.writableEnded || res.destroyed) return true;
  return res.write(envelope(0, { event }));
}

function endStream(res: ServerResponse) {
  if (res.writableEnded || res.destroyed) return;
  res.end(envelope(2, {}));
}

function sendStreamError(res: ServerResponse, code: string, message: string) {
  if (!res.headersSent) openStream(res);
  if (res.writableEnded || res.destroyed) return;
  res.end(envelope(2, { error: { code, message } }));
}
