/**
 * Attack suite, written from the attacker's side. Every payload tries to do something the host
 * can observe: reach a `process` object, write a marker file, call a host-only function, read a
 * canary from the host environment, pollute the host's Object/Array prototypes, leak host file
 * paths, keep the host's CPU past the timeout, flood the host with output, or use a feature the
 * sandbox removes. Each runs against the hardened sandbox in both isolation modes (asserting it
 * failed) and against a deliberately naive sandbox (asserting the same payload succeeds there,
 * so the test can fail).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { type Isolation, MCPAppSandbox, type RunResult } from '../src/index.js';
import { runNaive } from './naive.js';

const dir = mkdtempSync(join(tmpdir(), 'vm-sandbox-attacks-'));
const MARKER = join(dir, 'escaped');
const CANARY_KEY = 'MCPSBX_ATTACK_CANARY';
const CANARY_VALUE = `host-secret-${Math.random().toString(36).slice(2)}`;
process.env[CANARY_KEY] = CANARY_VALUE;
let hostOnlyCalls = 0;
(globalThis as Record<string, unknown>).__mcpsbxHostOnly = () => {
  hostOnlyCalls++;
};
const HOST_PATH = import.meta.dirname;

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  delete process.env[CANARY_KEY];
  delete (globalThis as Record<string, unknown>).__mcpsbxHostOnly;
});

// The host API both designs get. hostFn deep-merges its argument the naive way on purpose.
const hostTarget: Record<string, unknown> = {};
function naiveMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const key in source) {
    const value = source[key];
    if (value !== null && typeof value === 'object') {
      if (target[key] === undefined || target[key] === null) target[key] = {};
      naiveMerge(target[key] as Record<string, unknown>, value as Record<string, unknown>);
    } else {
      target[key] = value;
    }
  }
}
const exposed = {
  hostFn: async (arg?: unknown) => {
    if (arg !== null && typeof arg === 'object') naiveMerge(hostTarget, arg as Record<string, unknown>);
    return { ok: 1, items: [1, 2] };
  },
  failingFn: () => {
    throw new Error('fail');
  },
  asyncFailFn: async () => {
    throw new TypeError('async fail');
  },
};
const globals = {
  cfg: { a: 1, list: [1, 2] },
  helper: function helper(x: unknown) {
    return x;
  },
};

// Shared attacker toolkit: given anything, walk to a Function constructor and use it to reach
// the realm's globalThis; if that realm has `process`, do every observable thing.
const KIT = String.raw`
const MARKER = ${JSON.stringify(MARKER)};
const SandboxFunction = Function;
function pwn(F) {
  if (typeof F !== 'function') return false;
  // A function of another realm (the host's, or the child's) is an escape by itself, even where
  // code generation is off and it cannot be called with a string.
  try { if (F !== SandboxFunction.prototype && !(F instanceof SandboxFunction)) console.log('FOREIGN-REALM'); } catch {}
  let g;
  try { g = F('return globalThis')(); } catch { return false; }
  if (!g || typeof g.process !== 'object') return false;
  console.log('REACHED-PROCESS');
  try { g.__mcpsbxHostOnly(); } catch {}
  try { g.Object.prototype.__mcpsbxPolluted = 'yes'; } catch {}
  try { g.process.getBuiltinModule('fs').writeFileSync(MARKER, 'escaped'); } catch {}
  try { console.log('CANARY:' + g.process.env.${CANARY_KEY}); } catch {}
  return true;
}
function tryPwn(x) {
  const paths = [
    (v) => v.constructor,
    (v) => v.constructor.constructor,
    (v) => Object.getPrototypeOf(v).constructor,
    (v) => Object.getPrototypeOf(v).constructor.constructor,
    (v) => v,
  ];
  for (const path of paths) {
    try { if (pwn(path(x))) return true; } catch {}
  }
  return false;
}
function edgeErrors(fn) {
  const errors = [];
  function down() {
    try { down(); } catch (e) {
      try { fn(); } catch (e2) { try { errors.push(e2); } catch {} }
    }
  }
  down();
  return errors;
}
`;

type Kind =
  /** Tries to reach the host realm or host data; nothing observable may happen. */
  | 'escape'
  /** Tries to keep the CPU past the timeout. */
  | 'cpu'
  /** Tries to flood the host with console output. */
  | 'flood'
  /** Tries a capability the sandbox removes; the payload logs FEATURE-WORKS when it works. */
  | 'feature';

interface Payload {
  readonly name: string;
  readonly category: string;
  readonly kind: Kind;
  readonly code: string;
  /** The naive design falls to it (the control). */
  readonly naiveFalls: boolean;
  /** Isolation modes where the payload is meaningful (default both). */
  readonly modes?: readonly Isolation[];
  /** Also run in process isolation with code generation allowed. */
  readonly withCodeGeneration?: boolean;
}

const p = (
  category: string,
  name: string,
  kind: Kind,
  code: string,
  naiveFalls = true,
  extra: Partial<Payload> = {},
): Payload => ({ category, name, kind, code, naiveFalls, withCodeGeneration: kind === 'escape', ...extra });

const SPIN = 'const __end = Date.now() + 1500; while (Date.now() < __end) {}';

const PAYLOADS: readonly Payload[] = [
  // constructor chains through everything the host provides
  p('constructor chain', 'console object', 'escape', 'tryPwn(console);'),
  p('constructor chain', 'console.log', 'escape', 'tryPwn(console.log);'),
  p('constructor chain', 'console.log.call', 'escape', 'tryPwn(console.log.call);'),
  p('constructor chain', 'global object', 'escape', 'tryPwn(globalThis); tryPwn(this);'),
  p('constructor chain', 'data global (object)', 'escape', 'tryPwn(cfg);'),
  p('constructor chain', 'data global (array)', 'escape', 'tryPwn(cfg.list);'),
  p('constructor chain', 'helper global function', 'escape', 'tryPwn(helper);'),
  p('constructor chain', 'exposed function', 'escape', 'tryPwn(hostFn);'),
  p('constructor chain', "exposed function's prototype", 'escape', 'tryPwn(Object.getPrototypeOf(hostFn));'),
  p('constructor chain', 'exposed function bound', 'escape', 'tryPwn(hostFn.bind(null));'),
  p('constructor chain', 'exposed function .toString', 'escape', 'tryPwn(hostFn.toString);'),
  p('constructor chain', 'result of an exposed call', 'escape', 'const r = await hostFn(); tryPwn(r);'),
  p('constructor chain', 'nested result array', 'escape', 'const r = await hostFn(); tryPwn(r.items);'),
  p(
    'constructor chain',
    'promise an exposed call returns',
    'escape',
    'const pr = hostFn(); tryPwn(pr); await pr;',
  ),
  p(
    'constructor chain',
    'error thrown by an exposed function',
    'escape',
    'try { await failingFn(); } catch (e) { tryPwn(e); }',
  ),
  p(
    'constructor chain',
    'rejection of an async exposed function',
    'escape',
    'await asyncFailFn().then(null, (e) => tryPwn(e));',
  ),
  p(
    'constructor chain',
    'every value reachable from the global object',
    'escape',
    `const seen = new Set();
     const visit = (value, depth) => {
       if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value) || depth > 3) return;
       seen.add(value);
       // Only foreign functions are used (calling every host function found would be chaos).
       if (typeof value === 'function' && value !== SandboxFunction.prototype && !(value instanceof SandboxFunction)) {
         pwn(value.constructor);
       }
       for (const key of Reflect.ownKeys(value)) {
         let next;
         try { const d = Reflect.getOwnPropertyDescriptor(value, key); next = d && ('value' in d ? d.value : d.get); } catch { continue; }
         visit(next, depth + 1);
       }
     };
     visit(globalThis, 0);
     try { visit(__mcpsbx, 0); } catch {}
     console.log('visited ' + seen.size);`,
  ),
  p(
    'constructor chain',
    'property descriptor of console.log',
    'escape',
    "tryPwn(Object.getOwnPropertyDescriptor(console, 'log').value);",
  ),
  p(
    'constructor chain',
    'Reflect.getPrototypeOf on provided objects',
    'escape',
    'for (const o of [console, cfg, hostFn]) tryPwn(Reflect.getPrototypeOf(o));',
  ),
  // stack-trace API
  p(
    'stack trace',
    'Error.prepareStackTrace call sites',
    'escape',
    `Error.prepareStackTrace = (e, frames) => {
       tryPwn(frames);
       for (const f of frames) { try { tryPwn(f.getThis()); } catch {} try { tryPwn(f.getFunction()); } catch {} }
       return 'x';
     };
     try { await failingFn(); } catch (e) { String(e.stack); }
     const own = new Error('x'); String(own.stack);
     try { console.log(null.x); } catch (e) { String(e.stack); }`,
  ),
  p(
    'stack trace',
    'Error.captureStackTrace on an object',
    'escape',
    `const o = {}; try { Error.captureStackTrace(o); tryPwn(o.stack); } catch (e) { tryPwn(e); }
     try { await failingFn(); } catch (e) { Error.captureStackTrace(e); tryPwn(e); }`,
  ),
  p(
    'stack trace',
    'host file paths in error stacks',
    'escape',
    `try { await failingFn(); } catch (e) { console.log('STACK ' + String(e.stack)); }
     try { await hostFn(); throw new Error('mine'); } catch (e) { console.log('STACK ' + String(e.stack)); }`,
  ),
  p(
    'stack trace',
    'stackTraceLimit and a throwing name getter',
    'escape',
    `try { Error.stackTraceLimit = 50; } catch {}
     const e = new Error('x');
     Object.defineProperty(e, 'name', { get() { throw Symbol('s'); } });
     try { String(e.stack); } catch (err) { tryPwn(err); }
     try { await failingFn(); } catch (h) { tryPwn(h); }`,
  ),
  // stack overflow at the host's edge
  p(
    'stack overflow',
    'RangeError from console.log at the stack edge',
    'escape',
    `for (const e of edgeErrors(() => console.log(''))) tryPwn(e);`,
    false,
  ),
  p(
    'stack overflow',
    'RangeError from an exposed function at the stack edge',
    'escape',
    `for (const e of edgeErrors(() => hostFn())) tryPwn(e); for (const e of edgeErrors(() => failingFn())) tryPwn(e);`,
    false,
  ),
  p(
    'stack overflow',
    'RangeError from .stack formatting at the stack edge',
    'escape',
    `for (const e of edgeErrors(() => String(new Error('x').stack))) tryPwn(e); tryPwn(console);`,
  ),
  p(
    'stack overflow',
    'plain unbounded recursion',
    'escape',
    'function f() { f(); } try { f(); } catch (e) { tryPwn(e); } tryPwn(console.log);',
  ),
  // Proxy and Reflect
  p(
    'proxy',
    'Proxy argument with traps that capture what the host passes',
    'escape',
    `const seen = [];
     let recording = true;
     const trap = new Proxy({ a: 1 }, new Proxy({}, { get: (t, name) => (...args) => { if (recording) seen.push(...args); return Reflect[name](...args); } }));
     try { await hostFn(trap); } catch {}
     recording = false;
     for (const v of seen) tryPwn(v);
     tryPwn(hostFn);`,
  ),
  p(
    'proxy',
    'Proxy as a thrown value the host may inspect',
    'escape',
    `const evil = new Proxy(new Error('x'), { get(t, k) { tryPwn(console); return Reflect.get(t, k); }, getPrototypeOf(t) { tryPwn(console); return Reflect.getPrototypeOf(t); } });
     throw evil;`,
  ),
  p(
    'proxy',
    'Reflect.construct with an exposed function as newTarget',
    'escape',
    `for (const target of [hostFn, helper, console.log]) { try { tryPwn(Reflect.construct(Array, [], target)); } catch {} try { tryPwn(Reflect.construct(Object, [], target)); } catch {} }`,
  ),
  p(
    'proxy',
    'Proxy in the global prototype chain',
    'escape',
    `const grab = new Proxy({}, { get(t, k, r) { tryPwn(r); return undefined; }, has() { return false; } });
     try { Object.setPrototypeOf(Object.getPrototypeOf(globalThis), grab); } catch {}
     await hostFn({ a: 1 }); tryPwn(hostFn);`,
  ),
  // Symbol.species and thenables
  p(
    'thenable',
    'Promise.prototype.then hijack (host awaits a sandbox promise)',
    'escape',
    `const then = Promise.prototype.then;
     Promise.prototype.then = function (res, rej) { tryPwn(res); tryPwn(rej); return then.call(this, res, rej); };
     await hostFn();`,
  ),
  p(
    'thenable',
    'Object.prototype.then getter',
    'escape',
    `Object.defineProperty(Object.prototype, 'then', { configurable: true, get() { tryPwn(this); return undefined; } });
     await hostFn(); await failingFn().catch(() => 0);`,
    false,
  ),
  p(
    'thenable',
    'Symbol.species on the promise an exposed call returns',
    'escape',
    `const pr = hostFn();
     tryPwn(Object.getPrototypeOf(pr).constructor[Symbol.species]);
     class Evil extends Promise { constructor(ex) { super((res, rej) => { tryPwn(res); ex(res, rej); }); } }
     try { pr.constructor = Evil; } catch {}
     try { Object.defineProperty(Promise, Symbol.species, { get() { return Evil; } }); } catch {}
     try { tryPwn(pr.constructor[Symbol.species]); } catch {}
     await pr.then((v) => v);`,
  ),
  p(
    'thenable',
    'thenable returned into the host',
    'escape',
    `return { then(res) { tryPwn(res); res(1); } };`,
    false,
  ),
  // coercions the host might perform
  p(
    'coercion',
    'toJSON/toString/valueOf on arguments capture their caller',
    'escape',
    `const grab = function () { try { tryPwn(grab.caller); } catch {} try { tryPwn(arguments.callee.caller); } catch {} return 'x'; };
     await hostFn({ toJSON: grab, toString: grab, valueOf: grab, [Symbol.toPrimitive]: grab });
     tryPwn(hostFn);`,
  ),
  p(
    'coercion',
    'getter on an argument runs where the host reads it',
    'escape',
    `let reads = 0;
     await hostFn({ get deep() { reads++; try { tryPwn(arguments.callee.caller); } catch {} return { x: 1 }; } });
     console.log('getter reads ' + reads); tryPwn(console.log);`,
  ),
  p(
    'coercion',
    'thrown object with a message getter',
    'cpu',
    `throw { get message() { ${SPIN}; return 'slow'; }, get name() { ${SPIN}; return 'E'; } };`,
  ),
  // prototype pollution
  p(
    'prototype pollution',
    '__proto__ key into a host deep merge',
    'escape',
    `await hostFn(JSON.parse('{"__proto__":{"__mcpsbxPolluted":"yes"}}'));`,
  ),
  p(
    'prototype pollution',
    'constructor.prototype key into a host deep merge',
    'escape',
    `await hostFn({ constructor: { prototype: { __mcpsbxPolluted: 'yes' } } });`,
  ),
  p(
    'prototype pollution',
    'prototype of a data global',
    'escape',
    `Object.getPrototypeOf(cfg).__mcpsbxPolluted = 'yes'; Object.getPrototypeOf(cfg.list).__mcpsbxPolluted = 'yes';`,
  ),
  p(
    'prototype pollution',
    'prototype of console and of exposed functions',
    'escape',
    `Object.getPrototypeOf(console).__mcpsbxPolluted = 'yes'; Object.getPrototypeOf(Object.getPrototypeOf(hostFn)).__mcpsbxPolluted = 'yes';`,
  ),
  p(
    'prototype pollution',
    "sandbox's own Object.prototype before calling the host",
    'escape',
    `Object.prototype.__mcpsbxPolluted = 'yes'; Array.prototype.__mcpsbxPolluted = 'yes'; await hostFn({ a: [1] });`,
    false,
  ),
  // async timeout escapes
  p('async timeout', 'busy loop after await', 'cpu', `await null; ${SPIN}`),
  p('async timeout', 'busy loop after an exposed call', 'cpu', `await hostFn(); ${SPIN}`),
  p(
    'async timeout',
    'microtask chain',
    'cpu',
    `const end = Date.now() + 1500; const loop = () => { if (Date.now() < end) return Promise.resolve().then(loop); }; await loop();`,
  ),
  p(
    'async timeout',
    'busy loop in a rejection handler',
    'cpu',
    `await asyncFailFn().catch(() => { ${SPIN} });`,
  ),
  // log floods
  p(
    'log flood',
    'many large lines',
    'flood',
    `for (let i = 0; i < 40; i++) console.log('x'.repeat(1_000_000));`,
  ),
  p('log flood', 'one huge line', 'flood', `console.log('y'.repeat(20_000_000));`),
  // dynamic import
  p(
    'dynamic import',
    'import() of node:fs',
    'escape',
    `import('node:fs').then((fs) => fs.writeFileSync(MARKER, 'x'), (e) => tryPwn(e));`,
  ),
  p(
    'dynamic import',
    'import() hidden in eval (code generation allowed)',
    'escape',
    `try { await eval('import("node:fs")').then((fs) => fs.writeFileSync(MARKER, 'x'), (e) => tryPwn(e)); } catch (e) { tryPwn(e); }`,
  ),
  p(
    'dynamic import',
    'import() through new Function (code generation allowed)',
    'escape',
    `try { await new Function('return import("node:fs")')().then((fs) => fs.writeFileSync(MARKER, 'x'), (e) => tryPwn(e)); } catch (e) { tryPwn(e); }`,
  ),
  // eval / Function / WebAssembly
  p(
    'code generation',
    'eval and the Function constructors',
    'feature',
    `let works = 0;
     try { if (eval('1 + 1') === 2) works++; } catch {}
     try { if (new Function('return 2')() === 2) works++; } catch {}
     try { if ((async function () {}).constructor('return 3')) works++; } catch {}
     try { if ((function* () {}).constructor('yield 4')) works++; } catch {}
     if (works > 0) console.log('FEATURE-WORKS ' + works);`,
  ),
  p(
    'code generation',
    'WebAssembly',
    'feature',
    `try {
       const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
       if (new WebAssembly.Module(bytes)) console.log('FEATURE-WORKS');
     } catch {}`,
  ),
  p(
    'shared memory',
    'SharedArrayBuffer and Atomics.wait',
    'feature',
    `try {
       const cell = new Int32Array(new SharedArrayBuffer(4));
       Atomics.wait(cell, 0, 0, 50);
       console.log('FEATURE-WORKS');
     } catch {}`,
  ),
  p(
    'shared memory',
    'FinalizationRegistry and WeakRef (callbacks after the timeout)',
    'feature',
    `try { new FinalizationRegistry(() => {}); new WeakRef({}); console.log('FEATURE-WORKS'); } catch {}`,
  ),
];

function cleanHost() {
  rmSync(MARKER, { force: true });
  hostOnlyCalls = 0;
  for (const proto of [Object.prototype, Array.prototype] as Record<string, unknown>[]) {
    delete proto.__mcpsbxPolluted;
  }
  for (const key of Object.keys(hostTarget)) delete hostTarget[key];
}

/** Everything a payload of kind `escape` could have done to the host. */
function hostDamage(logs: readonly string[]): string[] {
  const damage: string[] = [];
  if (existsSync(MARKER)) damage.push('marker file written');
  if (hostOnlyCalls > 0) damage.push('host-only function called');
  if (({} as Record<string, unknown>).__mcpsbxPolluted !== undefined)
    damage.push('host Object.prototype polluted');
  if (([] as unknown as Record<string, unknown>).__mcpsbxPolluted !== undefined)
    damage.push('host Array.prototype polluted');
  if (logs.some((l) => l.includes('REACHED-PROCESS'))) damage.push('reached a process object');
  if (logs.some((l) => l.includes('FOREIGN-REALM'))) damage.push('reached a function of another realm');
  if (logs.some((l) => l.includes(CANARY_VALUE))) damage.push('read the host environment');
  if (logs.some((l) => l.includes(HOST_PATH))) damage.push('leaked host file paths');
  return damage;
}

async function runHardened(
  payload: Payload,
  isolation: Isolation,
  allowCodeGeneration: boolean,
): Promise<{ result: RunResult; logs: string[]; durationMs: number; logBytes: number }> {
  const sandbox = new MCPAppSandbox({
    code: KIT + payload.code,
    isolation,
    allowCodeGeneration,
    timeout: 300,
    maxLogBytes: 1024 * 1024,
    globals,
  });
  for (const [name, fn] of Object.entries(exposed)) sandbox.expose(name, fn);
  const logs: string[] = [];
  sandbox.on('log', (entry) => logs.push(entry.message));
  sandbox.on('error', (error) => logs.push(`error:${error.name}:${error.message}`));
  const started = performance.now();
  const result = await sandbox.run();
  const durationMs = performance.now() - started;
  await sandbox.dispose();
  // Let anything the payload scheduled on the host run before we look.
  await new Promise((resolve) => setTimeout(resolve, 20));
  return { result, logs, durationMs, logBytes: logs.reduce((n, l) => n + l.length, 0) };
}

function assertDefended(payload: Payload, run: Awaited<ReturnType<typeof runHardened>>): void {
  expect(hostDamage(run.logs)).toEqual([]);
  switch (payload.kind) {
    case 'cpu':
      expect(run.result).toMatchObject({ status: 'crashed', crash: { reason: 'timeout' } });
      expect(run.durationMs).toBeLessThan(1400);
      break;
    case 'flood':
      expect(run.logBytes).toBeLessThanOrEqual(1024 * 1024 + 200);
      break;
    case 'feature':
      expect(run.logs.join('\n')).not.toContain('FEATURE-WORKS');
      break;
    case 'escape':
      break;
  }
}

beforeEach(cleanHost);

describe('attack suite', () => {
  it('has at least 40 payloads across the categories of the threat model', () => {
    expect(PAYLOADS.length).toBeGreaterThanOrEqual(40);
    expect(new Set(PAYLOADS.map((x) => x.category)).size).toBeGreaterThanOrEqual(12);
  });

  for (const payload of PAYLOADS) {
    describe(`${payload.category}: ${payload.name}`, () => {
      for (const isolation of payload.modes ?? (['process', 'in-process-trusted'] as const)) {
        it(`is defended (${isolation})`, async () => {
          assertDefended(payload, await runHardened(payload, isolation, false));
        });
      }
      if (payload.withCodeGeneration) {
        it('is defended (process, code generation allowed)', async () => {
          assertDefended(payload, await runHardened(payload, 'process', true));
        });
      }
      if (payload.naiveFalls) {
        it('succeeds against the naive design (control)', async () => {
          const naive = await runNaive(KIT + payload.code, { ...exposed, ...globals }, { timeoutMs: 300 });
          try {
            switch (payload.kind) {
              case 'escape':
                expect(hostDamage(naive.logs)).not.toEqual([]);
                break;
              case 'cpu':
                expect(naive.durationMs).toBeGreaterThanOrEqual(1400);
                break;
              case 'flood':
                expect(naive.logs.reduce((n, l) => n + l.length, 0)).toBeGreaterThan(1024 * 1024 + 200);
                break;
              case 'feature':
                expect(naive.logs.join('\n')).toContain('FEATURE-WORKS');
                break;
            }
          } finally {
            cleanHost();
          }
        });
      }
    });
  }
});

describe('resource exhaustion (process isolation)', () => {
  const run = async (code: string, options: { memoryLimitMb: number; maxRssMb: number; timeout: number }) => {
    const sandbox = new MCPAppSandbox({ code, ...options });
    const result = await sandbox.run();
    await sandbox.dispose();
    return result;
  };

  it('kills an app that exhausts its heap, and the host keeps running', async () => {
    const result = await run('const keep = []; for (;;) keep.push(new Array(100000).fill({ x: 1 }));', {
      memoryLimitMb: 64,
      maxRssMb: 512,
      timeout: 20_000,
    });
    expect(result).toMatchObject({ status: 'crashed', crash: { reason: 'memory' } });
  });

  const BUFFERS = `const keep = []; for (let i = 0; i < 8; i++) keep.push(new Uint8Array(64 * 1024 * 1024).fill(1)); console.log('allocated');`;

  it('kills an app that fills memory outside the heap (ArrayBuffers) through the RSS watchdog', async () => {
    // Past the kernel's data limit (maxRssMb + 64) an allocation fails: the app stays alive.
    const result = await run(`try { ${BUFFERS} } catch {} setTimeout(() => {}, 2000);`, {
      memoryLimitMb: 64,
      maxRssMb: 256,
      timeout: 20_000,
    });
    expect(result).toMatchObject({ status: 'crashed', crash: { reason: 'memory' } });
  });

  it('control: the heap cap alone does not bound ArrayBuffers', async () => {
    const result = await run(BUFFERS, { memoryLimitMb: 64, maxRssMb: 100_000, timeout: 20_000 });
    expect(result).toEqual({ status: 'finished' });
  });
});
