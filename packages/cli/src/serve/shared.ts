import { idKey, isRequest, isResponse, jsonRpcError } from './streams.js';
import type { Message, ServerLink, Upstream } from './upstream.js';

/** The client capability a server-to-client request needs, by method. */
const NEEDS: Readonly<Record<string, string>> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};
const RELATED = 'io.modelcontextprotocol/related-request-id';

interface Call {
  readonly port: SharedPort;
  readonly id: unknown;
  readonly wireToken: string | undefined;
}

type InitState =
  | { readonly state: 'none' }
  | { readonly state: 'pending'; readonly wireKey: string; readonly waiting: Array<[SharedPort, unknown]> }
  | { readonly state: 'done'; readonly result: unknown };

/**
 * `--shared`: one sandboxed stdio server for every session. The server sees one client: the first
 * `initialize` goes through and later sessions are answered from its result; request ids and
 * progress tokens are rewritten so that sessions never collide, and restored on the way back;
 * server requests go to the one session they provably belong to, or are refused; other
 * notifications go to every session.
 */
export class SharedServer {
  readonly #start: (onMessage: (message: Message) => void) => Upstream;
  readonly #warn: (text: string) => void;
  readonly #ports = new Set<SharedPort>();
  readonly #calls = new Map<string, Call>();
  readonly #tokens = new Map<string, Call>();
  /** The server's own requests to clients: which session's client was asked. */
  readonly #asked = new Map<string, SharedPort>();
  #upstream: Upstream | undefined;
  #init: InitState = { state: 'none' };
  #initialized = false;
  #next = 0;

  constructor(
    start: (onMessage: (message: Message) => void) => Upstream,
    warn: (text: string) => void = () => {},
  ) {
    this.#start = start;
    this.#warn = warn;
  }

  get upstream(): Upstream | undefined {
    return this.#upstream;
  }

  /** A session's link to the shared server. */
  link(onMessage: (message: Message) => void): ServerLink {
    const upstream = this.#ensure();
    const port = new SharedPort(this, upstream, onMessage);
    this.#ports.add(port);
    return port;
  }

  close(): void {
    this.#upstream?.close();
  }

  #ensure(): Upstream {
    if (this.#upstream && !this.#upstream.ended) return this.#upstream;
    const upstream = this.#start((message) => this.#fromServer(message));
    this.#upstream = upstream;
    void upstream.done.then(() => {
      if (this.#upstream !== upstream) return;
      for (const port of this.#ports) port.end();
      this.#ports.clear();
      this.#calls.clear();
      this.#tokens.clear();
      this.#asked.clear();
      this.#init = { state: 'none' };
      this.#initialized = false;
    });
    return upstream;
  }

  fromClient(port: SharedPort, message: Message): void {
    const upstream = this.#upstream;
    if (!upstream) return;
    if (isResponse(message)) {
      const key = idKey(message.id);
      if (key === undefined || this.#asked.get(key) !== port) return; // not asked of this client
      this.#asked.delete(key);
      upstream.send(message);
    } else if (isRequest(message)) {
      if (message.method === 'initialize') this.#initialize(port, message, upstream);
      else upstream.send(this.#rewrite(port, message));
    } else if (message.method === 'notifications/initialized') {
      if (!this.#initialized) upstream.send(message);
      this.#initialized = true;
    } else if (message.method === 'notifications/cancelled') {
      const params = message.params as { requestId?: unknown } | undefined;
      const wireId = port.inFlight.get(idKey(params?.requestId) ?? '');
      if (wireId === undefined) return;
      // No longer in flight: it owns no server request, and a late answer goes nowhere.
      const call = this.#calls.get(`s:${wireId}`);
      if (call) this.#forget(`s:${wireId}`, call);
      upstream.send({ ...message, params: { ...params, requestId: wireId } });
    } else {
      upstream.send(message);
    }
  }

  #initialize(port: SharedPort, message: Message, upstream: Upstream): void {
    const params = message.params as { capabilities?: Record<string, unknown> } | undefined;
    port.capabilities = params?.capabilities ?? {};
    const init = this.#init;
    if (init.state === 'done') {
      port.deliver({ jsonrpc: '2.0', id: message.id, result: init.result });
    } else if (init.state === 'pending') {
      init.waiting.push([port, message.id]);
    } else {
      const wireId = `mcp-sandbox-init-${++this.#next}`;
      this.#init = { state: 'pending', wireKey: `s:${wireId}`, waiting: [[port, message.id]] };
      upstream.send({ ...message, id: wireId });
    }
  }

  #rewrite(port: SharedPort, message: Message): Message {
    const n = ++this.#next;
    const wireId = `mcp-sandbox-${n}`;
    const params = message.params as
      | (Record<string, unknown> & { _meta?: Record<string, unknown> })
      | undefined;
    const token = params?._meta?.progressToken;
    const wireToken = idKey(token) === undefined ? undefined : `mcp-sandbox-progress-${n}`;
    const call: Call = { port, id: message.id, wireToken };
    this.#calls.set(`s:${wireId}`, call);
    port.inFlight.set(idKey(message.id) as string, wireId);
    if (wireToken === undefined) return { ...message, id: wireId };
    this.#tokens.set(`s:${wireToken}`, { ...call, id: token });
    return {
      ...message,
      id: wireId,
      params: { ...params, _meta: { ...params?._meta, progressToken: wireToken } },
    };
  }

  #fromServer(message: Message): void {
    if (isResponse(message)) {
      this.#response(message);
      return;
    }
    if (isRequest(message)) {
      this.#serverRequest(message);
      return;
    }
    const params = message.params as Record<string, unknown> | undefined;
    if (message.method === 'notifications/progress') {
      const call = this.#tokens.get(idKey(params?.progressToken) ?? '');
      call?.port.deliver({ ...message, params: { ...params, progressToken: call.id } });
      return;
    }
    if (message.method === 'notifications/cancelled') {
      const key = idKey(params?.requestId) ?? '';
      this.#asked.get(key)?.deliver(message);
      this.#asked.delete(key);
      return;
    }
    // list_changed, resources/updated, log messages: the server has one client, so all get them.
    for (const port of this.#ports) port.deliver(message);
  }

  #response(message: Message): void {
    const key = idKey(message.id) ?? '';
    const init = this.#init;
    if (init.state === 'pending' && init.wireKey === key) {
      this.#init = 'result' in message ? { state: 'done', result: message.result } : { state: 'none' };
      for (const [port, id] of init.waiting) port.deliver({ ...message, id });
      return;
    }
    const call = this.#calls.get(key);
    if (!call) return;
    this.#forget(key, call);
    call.port.deliver({ ...message, id: call.id });
  }

  #forget(key: string, call: Call): void {
    this.#calls.delete(key);
    call.port.inFlight.delete(idKey(call.id) as string);
    if (call.wireToken !== undefined) this.#tokens.delete(`s:${call.wireToken}`);
  }

  #serverRequest(message: Message): void {
    const route = this.#route(message);
    if (typeof route === 'string') {
      // The reason goes to the server in the error (so the trace records it) and to stderr.
      const reason = `${String(message.method)}: ${route}`;
      this.#warn(`--shared: ${reason}`);
      this.#upstream?.send(jsonRpcError(message.id, -32603, `mcp-sandbox --shared: ${reason}`));
      return;
    }
    this.#asked.set(idKey(message.id) as string, route);
    route.deliver(message);
  }

  /**
   * Who answers a server request, only when that is provable: the session a related-request link
   * or progress token names, else the one session with a request in flight. Anything else would
   * be a guess, and a guess hands one client's prompt to another: the answer is a reason instead.
   */
  #route(message: Message): SharedPort | string {
    const need = NEEDS[String(message.method)];
    const meta = (message.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
    const related = idKey(meta?.[RELATED]);
    const token = idKey(meta?.progressToken);
    const named = related !== undefined || token !== undefined;
    let owner: SharedPort | undefined;
    if (named) {
      owner = this.#calls.get(related ?? '')?.port ?? this.#tokens.get(token ?? '')?.port;
      if (!owner) return 'the request it names is not in flight; no session is asked';
    } else {
      const busy = [...this.#ports].filter((p) => p.inFlight.size > 0);
      if (busy.length !== 1) {
        return busy.length === 0
          ? 'no session has a request in flight; no session is asked'
          : `${busy.length} sessions have requests in flight and the request names none of them: cannot tell which session it belongs to, so none is asked`;
      }
      owner = busy[0] as SharedPort;
    }
    if (need !== undefined && owner.capabilities[need] === undefined) {
      return `the session it belongs to did not declare the ${need} capability`;
    }
    return owner;
  }

  /** A session ended: its requests are cancelled, and what the server asked of it fails. */
  detach(port: SharedPort): void {
    if (!this.#ports.delete(port)) return;
    const upstream = this.#upstream;
    for (const [key, call] of [...this.#calls]) {
      if (call.port !== port) continue;
      this.#forget(key, call);
      upstream?.send({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: key.slice(2), reason: 'the client session ended' },
      });
    }
    for (const [key, asked] of [...this.#asked]) {
      if (asked !== port) continue;
      this.#asked.delete(key);
      upstream?.send(
        jsonRpcError(
          key.startsWith('n:') ? Number(key.slice(2)) : key.slice(2),
          -32603,
          'the client session ended',
        ),
      );
    }
  }
}

/** One session's view of the shared server. */
export class SharedPort implements ServerLink {
  readonly #shared: SharedServer;
  readonly #upstream: Upstream;
  readonly #deliver: (message: Message) => void;
  /** This client's requests in flight: its id (as a key) → the id the server saw. */
  readonly inFlight = new Map<string, string>();
  capabilities: Record<string, unknown> = {};
  readonly done: Promise<void>;
  #end: () => void = () => {};
  #ended = false;

  constructor(shared: SharedServer, upstream: Upstream, deliver: (message: Message) => void) {
    this.#shared = shared;
    this.#upstream = upstream;
    this.#deliver = deliver;
    this.done = new Promise((resolve) => {
      this.#end = resolve;
    });
  }

  deliver(message: Message): void {
    if (!this.#ended) this.#deliver(message);
  }

  send(message: Message): void {
    if (!this.#ended) this.#shared.fromClient(this, message);
  }

  /** DELETE: this session leaves; the shared sandbox stays for the others. */
  close(): void {
    this.#shared.detach(this);
    this.end();
  }

  stop(): void {
    this.#upstream.stop();
  }

  end(): void {
    this.#ended = true;
    this.#end();
  }
}
