/**
 * The code that builds the sandbox's world from inside the context. It is never called in the
 * host realm: its source text (`Function.prototype.toString`) is compiled inside the context,
 * so every object it creates (console, timers, exposed functions, `mcp`, `io`) belongs to the
 * sandbox realm. It must stay self-contained: no imports, no references to module scope.
 *
 * The only host value it ever holds is `channel`, a host function that takes and returns
 * primitives. It is read from the global once, deleted before user code runs, kept in this
 * closure and only ever called directly (never through `apply`/`call`, which the app can replace).
 */

/** The host side of the single channel. Arguments and results are primitives only. */
export type Channel = (kind: string, a?: string | number, b?: string | number) => string | number | undefined;

export interface BootstrapConfig {
  readonly exposed: readonly string[];
  /** JSON text of the data globals (an object). */
  readonly globals: string;
  readonly helperNames: readonly string[];
  readonly api: 'app' | 'mcp' | 'raw';
  readonly env: Readonly<Record<string, string>>;
  readonly argv: readonly string[];
  readonly maxMessageBytes: number;
  readonly maxCallsInFlight: number;
  readonly maxCallBytesInFlight: number;
  readonly allowCodeGeneration: boolean;
  /** In the host's process: take away what lets Node's own machinery run app code with host values. */
  readonly inProcess: boolean;
}

export function contextBootstrap(configJson: string, helpers: readonly unknown[]): unknown {
  const G = globalThis as unknown as Record<string, unknown>;
  const channel = G.__mcpsbx_ch as Channel;
  delete G.__mcpsbx_ch;

  // Intrinsics captured before any user code runs.
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const ObjectCtor = Object;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const create = Object.create;
  const keysOf = Object.keys;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const apply = Reflect.apply;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const mapHas = Map.prototype.has;
  const StringCtor = String;
  const isArray = Array.isArray;
  const arrayPush = Array.prototype.push;
  const arrayJoin = Array.prototype.join;
  const stringIncludes = String.prototype.includes;
  const construct = Reflect.construct;
  const getPrototypeOf = Object.getPrototypeOf;
  const FunctionCtor = Function;
  const SyntaxErrorCtor = SyntaxError;

  const config = jsonParse(configJson) as BootstrapConfig;

  const send = (kind: string, a?: string | number, b?: string | number): string | number | undefined => {
    try {
      return channel(kind, a, b);
    } catch {
      // A host error (say a RangeError at the stack edge) is dropped here, never handed on.
      return undefined;
    }
  };

  const newMap = <K, V>() => new MapCtor<K, V>();
  const get = <K, V>(m: Map<K, V>, k: K): V | undefined => apply(mapGet, m, [k]) as V | undefined;
  const set = <K, V>(m: Map<K, V>, k: K, v: V): void => {
    apply(mapSet, m, [k, v]);
  };
  const del = <K, V>(m: Map<K, V>, k: K): void => {
    apply(mapDelete, m, [k]);
  };
  const has = <K, V>(m: Map<K, V>, k: K): boolean => apply(mapHas, m, [k]) as boolean;
  const then = (p: unknown, ok: (v: unknown) => unknown, bad: (e: unknown) => unknown): void => {
    apply(promiseThen, p, [ok, bad]);
  };
  const define = (target: object, name: string, value: unknown, writable = true) => {
    defineProperty(target, name, { value, writable, configurable: writable, enumerable: false });
  };

  // Lock the stack-trace API: with a non-number stackTraceLimit V8 captures no stack at all, so
  // Node's host-side formatter never runs on a sandbox error and `.stack` is undefined.
  defineProperty(ErrorCtor, 'stackTraceLimit', { value: undefined, writable: false, configurable: false });
  defineProperty(ErrorCtor, 'prepareStackTrace', { value: undefined, writable: false, configurable: false });
  delete (ErrorCtor as { captureStackTrace?: unknown }).captureStackTrace;
  for (const name of ['SharedArrayBuffer', 'Atomics', 'FinalizationRegistry', 'WeakRef']) delete G[name];
  if (config.inProcess) {
    // Node reads symbol keys of unhandled app promises in the host (rejection tracking): without
    // Proxy no trap runs there. Without the shared symbol registry the app cannot name
    // `nodejs.util.inspect.custom`, which a host logger's `inspect` would call with its own
    // `inspect` function. The promise prototype keeps its own prototype.
    delete G.Proxy;
    delete (G.Symbol as { for?: unknown }).for;
    delete (G.Symbol as { keyFor?: unknown }).keyFor;
    ObjectCtor.preventExtensions(PromiseCtor.prototype);
  }

  // Shared WebAssembly memory would bring SharedArrayBuffer back (its `buffer`): with Wasm
  // allowed, shared memories are refused, from the JS API and inside modules (a module is
  // checked before it compiles: its memory section and its memory imports).
  const Wasm = G.WebAssembly as Record<string, unknown> | undefined;
  if (Wasm !== undefined) {
    const Uint8 = Uint8Array;
    const isView = ArrayBuffer.isView;
    const ArrayBufferCtor = ArrayBuffer;
    const sliceBuffer = ArrayBuffer.prototype.slice;
    const refuseShared = () => {
      throw new TypeErrorCtor('shared WebAssembly memory is not available in this sandbox');
    };
    /** A private copy of a module's bytes, checked for shared memories. */
    const checkedBytes = (source: unknown): Uint8Array => {
      let bytes: Uint8Array;
      if (source instanceof ArrayBufferCtor)
        bytes = new Uint8(apply(sliceBuffer, source, [0]) as ArrayBuffer);
      else if (isView(source)) {
        const view = source as ArrayBufferView;
        bytes = new Uint8(
          apply(sliceBuffer, view.buffer, [
            view.byteOffset,
            view.byteOffset + view.byteLength,
          ]) as ArrayBuffer,
        );
      } else throw new TypeErrorCtor('a WebAssembly module needs an ArrayBuffer or a typed array');
      let pos = 8;
      const byte = (): number => {
        if (pos >= bytes.length) throw new TypeErrorCtor('truncated WebAssembly module');
        return bytes[pos++] as number;
      };
      const leb = (): number => {
        let result = 0;
        let shift = 0;
        for (;;) {
          const b = byte();
          result += (b & 0x7f) * 2 ** shift;
          if ((b & 0x80) === 0) return result;
          shift += 7;
          if (shift > 63) throw new TypeErrorCtor('malformed WebAssembly module');
        }
      };
      const limits = (memory: boolean) => {
        const flags = leb();
        if (memory && (flags & 2) !== 0) refuseShared();
        leb();
        if ((flags & 1) !== 0) leb();
      };
      while (pos < bytes.length) {
        const id = byte();
        const size = leb();
        const end = pos + size;
        if (id === 2 || id === 5) {
          const count = leb();
          for (let i = 0; i < count; i++) {
            if (id === 5) {
              limits(true);
              continue;
            }
            // Module and field names: a length, then that many bytes.
            for (let name = 0; name < 2; name++) {
              const length = leb();
              pos += length;
            }
            const kind = byte();
            if (kind === 0) leb();
            else if (kind === 1) {
              byte();
              limits(false);
            } else if (kind === 2) limits(true);
            else if (kind === 3) {
              byte();
              byte();
            } else if (kind === 4) {
              byte();
              leb();
            } else throw new TypeErrorCtor('malformed WebAssembly module');
          }
        }
        pos = end;
      }
      return bytes;
    };
    const MemoryCtor = Wasm.Memory as new (descriptor: unknown) => unknown;
    const ModuleCtor = Wasm.Module as new (bytes: unknown) => unknown;
    const compile = Wasm.compile as (bytes: unknown) => Promise<unknown>;
    const instantiate = Wasm.instantiate as (source: unknown, imports?: unknown) => Promise<unknown>;
    const validate = Wasm.validate as (bytes: unknown) => boolean;
    const Memory = function Memory(descriptor: unknown) {
      if (
        descriptor !== null &&
        typeof descriptor === 'object' &&
        (descriptor as { shared?: unknown }).shared
      )
        refuseShared();
      return construct(MemoryCtor, [descriptor]);
    };
    const Module = function Module(bytes: unknown) {
      return construct(ModuleCtor, [checkedBytes(bytes)]);
    };
    for (const [ctor, original] of [
      [Memory, MemoryCtor],
      [Module, ModuleCtor],
    ] as const) {
      defineProperty(ctor, 'prototype', { value: original.prototype, writable: false });
      defineProperty(original.prototype, 'constructor', { value: ctor, writable: true, configurable: true });
    }
    for (const key of ['exports', 'imports', 'customSections']) {
      define(Module, key, (ModuleCtor as unknown as Record<string, unknown>)[key]);
    }
    define(Wasm, 'Memory', Memory);
    define(Wasm, 'Module', Module);
    define(Wasm, 'compile', (bytes: unknown) => {
      try {
        return compile(checkedBytes(bytes));
      } catch (error) {
        return new PromiseCtor((_, reject) => reject(error));
      }
    });
    define(Wasm, 'instantiate', (source: unknown, imports?: unknown) => {
      try {
        // A compiled Module went through the check when it was made.
        return instantiate(source instanceof ModuleCtor ? source : checkedBytes(source), imports);
      } catch (error) {
        return new PromiseCtor((_, reject) => reject(error));
      }
    });
    define(Wasm, 'validate', (bytes: unknown) => validate(checkedBytes(bytes)));
    for (const key of ['compileStreaming', 'instantiateStreaming']) delete Wasm[key];
  }

  // With code generation opted in, import() in generated code would bypass the host's parser
  // check, and Node answers it with host-realm errors. Every way to compile a string goes
  // through a wrapper that refuses any source mentioning `import`.
  if (config.allowCodeGeneration) {
    const originalEval = G.eval as (source: unknown) => unknown;
    const refuse = (sources: string[]) => {
      for (const source of sources) {
        if (apply(stringIncludes, source, ['import']) as boolean) {
          throw new SyntaxErrorCtor('import is not available in this sandbox');
        }
      }
    };
    define(G, 'eval', function evaluate(source: unknown) {
      if (typeof source !== 'string') return source;
      refuse([source]);
      return originalEval(source);
    });
    const guardConstructor = (ctor: (...args: unknown[]) => unknown) => {
      const guarded = function (this: unknown, ...args: unknown[]) {
        const sources: string[] = [];
        for (const arg of args) apply(arrayPush, sources, [StringCtor(arg)]);
        refuse(sources);
        return construct(ctor, sources);
      };
      defineProperty(guarded, 'prototype', { value: ctor.prototype, writable: false });
      defineProperty(ctor.prototype, 'constructor', { value: guarded, writable: true, configurable: true });
      return guarded;
    };
    define(G, 'Function', guardConstructor(FunctionCtor as never));
    for (const sample of [async () => {}, function* () {}, async function* () {}]) {
      guardConstructor(getPrototypeOf(sample).constructor);
    }
  }

  const describe = (error: unknown): string => {
    let name = 'Error';
    let message = '';
    try {
      if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
        const e = error as { name?: unknown; message?: unknown };
        if (typeof e.name === 'string') name = e.name;
        if (typeof e.message === 'string') message = e.message;
      } else {
        message = StringCtor(error);
      }
    } catch {
      message = '(unprintable error)';
    }
    return jsonStringify({ name, message });
  };
  const reportError = (error: unknown) => {
    const d = describe(error);
    send('error', d);
  };
  const makeError = (name: unknown, message: unknown): Error => {
    const error = new ErrorCtor(typeof message === 'string' ? message : 'error');
    if (typeof name === 'string' && name !== 'Error') define(error, 'name', name);
    return error;
  };

  // console: everything is formatted to one string in here; only that string crosses.
  let logStopped = false;
  const format = (value: unknown, depth: number): string => {
    if (typeof value === 'string') return depth === 0 ? value : jsonStringify(value);
    if (typeof value === 'function') return '[Function]';
    if (typeof value === 'symbol') return (value as symbol).toString();
    if (typeof value !== 'object' || value === null) return StringCtor(value);
    if (value instanceof ErrorCtor) {
      const d = jsonParse(describe(value)) as { name: string; message: string };
      return `${d.name}: ${d.message}`;
    }
    try {
      const text = jsonStringify(value);
      return typeof text === 'string' ? text : StringCtor(value);
    } catch {
      return '[object]';
    }
  };
  const makeLogger = (level: string) =>
    function log(...args: unknown[]): void {
      if (logStopped) return;
      const parts: string[] = [];
      for (const arg of args) apply(arrayPush, parts, [format(arg, 0)]);
      const text = apply(arrayJoin, parts, [' ']) as string;
      // The host counts lines and text; once it refuses one, logging stops here too.
      if (send('log', level, text) !== 0) logStopped = true;
    };
  const consoleObject = create(null) as Record<string, unknown>;
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) consoleObject[level] = makeLogger(level);
  consoleObject.trace = consoleObject.debug;
  define(G, 'console', freeze(consoleObject));

  // Host round trips: the app gets a promise; the host answers with a `result` message.
  const pending = newMap<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  const request = (kind: string, name: string | number, payload: string): Promise<unknown> =>
    new PromiseCtor((resolve, reject) => {
      if (payload.length > config.maxMessageBytes) {
        reject(new TypeErrorCtor('arguments too large for the sandbox boundary'));
        return;
      }
      const id = send(kind, name, payload);
      if (id === -2) {
        reject(
          new ErrorCtor(
            `too many calls in flight (${config.maxCallsInFlight}, or ${config.maxCallBytesInFlight} bytes of arguments): await some first`,
          ),
        );
        return;
      }
      if (typeof id !== 'number' || id < 0) {
        reject(new ErrorCtor('the host refused the call'));
        return;
      }
      set(pending, id, { resolve, reject });
    });
  const callHost = (name: string, args: unknown[]): Promise<unknown> => {
    let payload: string | undefined;
    try {
      payload = jsonStringify(args);
    } catch (error) {
      return new PromiseCtor((_, reject) => reject(error));
    }
    if (typeof payload !== 'string') payload = '[]';
    return request('call', name, payload);
  };
  for (const name of config.exposed) {
    const holder = {
      [name]: (...args: unknown[]) => callHost(name, args),
    };
    define(G, name, holder[name]);
  }

  // Data globals arrive as JSON text; helper functions were compiled in this realm from source.
  const data = jsonParse(config.globals) as Record<string, unknown>;
  for (const key of keysOf(data)) define(G, key, data[key]);
  for (let i = 0; i < config.helperNames.length; i++) {
    define(G, config.helperNames[i] as string, helpers[i]);
  }

  // Timers run through the host's event loop; each callback is a new, timed entry.
  const timers = newMap<number, { fn: (...a: unknown[]) => unknown; args: unknown[]; repeat: boolean }>();
  const addTimer = (fn: unknown, ms: unknown, args: unknown[], repeat: boolean): number => {
    if (typeof fn !== 'function') throw new TypeErrorCtor('callback must be a function');
    const delay = typeof ms === 'number' && ms > 0 ? ms : 0;
    const id = send('timer', delay, repeat ? 1 : 0);
    if (typeof id !== 'number' || id < 0) throw new ErrorCtor('too many timers');
    set(timers, id, { fn: fn as (...a: unknown[]) => unknown, args, repeat });
    return id;
  };
  const clearTimer = (id: unknown) => {
    if (typeof id === 'number' && has(timers, id)) {
      del(timers, id);
      send('clear', id);
    }
  };
  define(G, 'setTimeout', (fn: unknown, ms?: unknown, ...args: unknown[]) => addTimer(fn, ms, args, false));
  define(G, 'setInterval', (fn: unknown, ms?: unknown, ...args: unknown[]) => addTimer(fn, ms, args, true));
  define(G, 'clearTimeout', clearTimer);
  define(G, 'clearInterval', clearTimer);
  define(G, 'queueMicrotask', (fn: unknown) => {
    if (typeof fn !== 'function') throw new TypeErrorCtor('callback must be a function');
    then(
      PromiseCtor.resolve(),
      () => (fn as () => unknown)(),
      () => undefined,
    );
  });

  const env = freeze(ObjectCtor.assign(create(null), config.env)) as Readonly<Record<string, string>>;
  const argv = freeze([...config.argv]);

  // The `mcp` API: the app registers tools, resources and prompts; the protocol runs on the host.
  const handlers = newMap<string, (...a: unknown[]) => unknown>();
  if (config.api === 'mcp') {
    const register = (kind: string, key: string, meta: Record<string, unknown>, handler: unknown) => {
      if (typeof key !== 'string' || key === '') throw new TypeErrorCtor(`${kind} needs a name`);
      if (typeof handler !== 'function') throw new TypeErrorCtor(`${kind} ${key} needs a handler function`);
      const answer = send('register', kind, jsonStringify(meta));
      if (answer === -2)
        throw new ErrorCtor(`too many registrations, or their metadata is too large: ${kind} ${key} refused`);
      if (answer !== 0) throw new TypeErrorCtor(`${kind} ${key}: invalid metadata`);
      set(handlers, `${kind}:${key}`, handler as (...a: unknown[]) => unknown);
    };
    const mcp = {
      env,
      argv,
      tool(name: string, description: unknown, inputSchema: unknown, handler?: unknown) {
        if (typeof inputSchema === 'function' && handler === undefined) {
          handler = inputSchema;
          inputSchema = undefined;
        }
        register(
          'tool',
          name,
          { name, description: typeof description === 'string' ? description : undefined, inputSchema },
          handler,
        );
      },
      resource(uri: string, name: unknown, description: unknown, handler?: unknown, mimeType?: unknown) {
        register(
          'resource',
          uri,
          {
            uri,
            name: typeof name === 'string' ? name : uri,
            description: typeof description === 'string' ? description : undefined,
            mimeType: typeof mimeType === 'string' ? mimeType : undefined,
          },
          handler,
        );
      },
      prompt(name: string, description: unknown, args: unknown, handler?: unknown) {
        if (typeof args === 'function' && handler === undefined) {
          handler = args;
          args = undefined;
        }
        register(
          'prompt',
          name,
          { name, description: typeof description === 'string' ? description : undefined, arguments: args },
          handler,
        );
      },
    };
    define(G, 'mcp', freeze(mcp));
  }

  // The `io` API: raw byte streams (latin1 strings, one char per byte) for non-MCP programs.
  const dataListeners: Array<(chunk: string) => unknown> = [];
  const endListeners: Array<() => unknown> = [];
  const signalListeners = newMap<string, Array<() => unknown>>();
  if (config.api === 'raw') {
    const write = (fd: number, chunk: unknown): Promise<unknown> => {
      if (typeof chunk !== 'string')
        return new PromiseCtor((_, reject) => reject(new TypeErrorCtor('write needs a string')));
      return request('out', fd, chunk);
    };
    const io = {
      env,
      argv,
      write: (chunk: unknown) => write(1, chunk),
      writeErr: (chunk: unknown) => write(2, chunk),
      onData(fn: unknown) {
        if (typeof fn !== 'function') throw new TypeErrorCtor('listener must be a function');
        apply(arrayPush, dataListeners, [fn]);
        send('keepalive', 1);
      },
      onEnd(fn: unknown) {
        if (typeof fn !== 'function') throw new TypeErrorCtor('listener must be a function');
        apply(arrayPush, endListeners, [fn]);
      },
      onSignal(name: unknown, fn: unknown) {
        if (typeof name !== 'string' || typeof fn !== 'function')
          throw new TypeErrorCtor('onSignal(name, fn)');
        const list = get(signalListeners, name) ?? [];
        apply(arrayPush, list, [fn]);
        set(signalListeners, name, list);
      },
      exit(code?: unknown) {
        send('exit', typeof code === 'number' ? code : 0);
      },
    };
    define(G, 'io', freeze(io));
  }

  const settle = (id: number, ok: boolean, value: unknown, error: unknown) => {
    const entry = get(pending, id);
    if (entry === undefined) return;
    del(pending, id);
    if (ok) entry.resolve(value);
    else {
      const e = (error ?? {}) as { name?: unknown; message?: unknown };
      entry.reject(makeError(e.name, e.message));
    }
  };

  const reply = (id: number, ok: boolean, value: unknown) => {
    let text: string | undefined;
    try {
      text = ok ? jsonStringify({ ok: true, value }) : describe(value);
    } catch (error) {
      ok = false;
      text = describe(error);
    }
    if (typeof text !== 'string') text = jsonStringify({ ok: true });
    send('reply', id, ok ? text : jsonStringify({ ok: false, error: jsonParse(text) }));
  };

  const invoke = (id: number, kind: string, name: string, args: unknown) => {
    const handler = get(handlers, `${kind}:${name}`);
    if (handler === undefined) {
      reply(id, false, new ErrorCtor(`unknown ${kind}: ${name}`));
      return;
    }
    const result = new PromiseCtor((resolve) => resolve(handler(args)));
    then(
      result,
      (value) => reply(id, true, value),
      (error) => reply(id, false, error),
    );
  };

  const dispatch = (message: Record<string, unknown>) => {
    switch (message.t) {
      case 'result':
        settle(
          message.id as number,
          message.ok === true,
          typeof message.v === 'string' ? jsonParse(message.v) : undefined,
          message.e,
        );
        return;
      case 'timer': {
        const id = message.id as number;
        const timer = get(timers, id);
        if (timer === undefined) return;
        if (!timer.repeat) del(timers, id);
        apply(timer.fn, undefined, timer.args);
        return;
      }
      case 'invoke':
        invoke(message.id as number, message.kind as string, message.name as string, message.args);
        return;
      case 'data':
        for (const fn of dataListeners) fn(message.chunk as string);
        return;
      case 'end':
        for (const fn of endListeners) fn();
        return;
      case 'signal': {
        const list = get(signalListeners, message.name as string);
        if (list === undefined || list.length === 0) send('signal-default', message.name as string);
        else for (const fn of list) fn();
        return;
      }
    }
  };

  let started = false;
  const entry = freeze({
    /** Runs the app's main function once; the host compiled it from the app's source. */
    main(fn: unknown) {
      if (started || typeof fn !== 'function') return;
      started = true;
      let result: unknown;
      try {
        result = (fn as () => unknown)();
      } catch (error) {
        reportError(error);
        send('main-done');
        return;
      }
      then(
        result,
        () => send('main-done'),
        (error) => {
          reportError(error);
          send('main-done');
        },
      );
    },
    /** Handles one host message; the host enters here under a timeout for every message. */
    pump() {
      const text = send('pull');
      if (typeof text !== 'string' || text === '') return;
      try {
        const message = jsonParse(text) as Record<string, unknown>;
        if (message !== null && typeof message === 'object' && !isArray(message)) dispatch(message);
      } catch (error) {
        reportError(error);
      }
    },
  });
  return entry;
}
