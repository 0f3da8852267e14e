import { describe, expect, it } from 'vitest';
import {
  AppCodeError,
  type CrashInfo,
  childArgv,
  type Isolation,
  type LogEntry,
  launchMCPApp,
  MCPAppSandbox,
  permissionFlag,
} from '../src/index.js';

const MODES: readonly Isolation[] = ['process', 'in-process-trusted'];

function record(sandbox: MCPAppSandbox) {
  const events: string[] = [];
  const logs: LogEntry[] = [];
  const crashes: CrashInfo[] = [];
  sandbox.on('log', (entry) => {
    logs.push(entry);
    events.push(`log:${entry.message}`);
  });
  sandbox.on('finished', () => events.push('finished'));
  sandbox.on('crash', (info) => {
    crashes.push(info);
    events.push(`crash:${info.reason}`);
  });
  sandbox.on('error', (error) => events.push(`error:${error.name}:${error.message}`));
  return { events, logs, crashes };
}

describe.each(MODES)('MCPAppSandbox (%s)', (isolation) => {
  it('delivers console output as log events, then finished', async () => {
    const sandbox = new MCPAppSandbox({
      isolation,
      code: `console.log('hello', 42, { a: [1, 2] }); console.warn('careful'); console.error(new TypeError('bad'));`,
    });
    const { events, logs } = record(sandbox);
    expect(await sandbox.run()).toEqual({ status: 'finished' });
    expect(events).toEqual(['log:hello 42 {"a":[1,2]}', 'log:careful', 'log:TypeError: bad', 'finished']);
    expect(logs.map((l) => l.level)).toEqual(['log', 'warn', 'error']);
  });

  it('stops while(true){} with a 500 ms timeout and a crash event; the host keeps working', async () => {
    const sandbox = new MCPAppSandbox({ isolation, timeout: 500, code: 'while (true) {}' });
    const { events } = record(sandbox);
    const started = Date.now();
    const result = await sandbox.run();
    expect(result).toMatchObject({ status: 'crashed', crash: { reason: 'timeout' } });
    expect(Date.now() - started).toBeLessThan(500 + 1500);
    expect(events).toEqual(['crash:timeout']);
    // The host still runs sandboxes after that.
    const next = launchMCPApp(`console.log('still here')`, { isolation });
    const after = record(next);
    await next.run();
    expect(after.events).toEqual(['log:still here', 'finished']);
  });

  it.each([
    ['a promise loop', 'const spin = () => Promise.resolve().then(spin); spin();'],
    ['an async loop after await', 'await null; for (;;) {}'],
    ['a loop after an exposed call', 'await tick(); while (true) {}'],
    ['a loop in a timer', 'setTimeout(() => { for (;;) {} }, 5);'],
    ['a microtask flood', 'for (;;) { await undefined; }'],
  ])('times out %s', async (_, code) => {
    const sandbox = new MCPAppSandbox({ isolation, timeout: 300, code });
    sandbox.expose('tick', async () => 1);
    const started = Date.now();
    const result = await sandbox.run();
    expect(result).toMatchObject({ status: 'crashed', crash: { reason: 'timeout' } });
    expect(Date.now() - started).toBeLessThan(300 + 2000);
  });

  it('gives the app custom globals: a context object and a helper function', async () => {
    const sandbox = new MCPAppSandbox({
      isolation,
      globals: {
        userContext: { user: 'ada', roles: ['admin'] },
        formatName(name: string) {
          return `<${name.toUpperCase()}>`;
        },
        double: (n: number) => n * 2,
      },
      code: `console.log(formatName(userContext.user), userContext.roles[0], double(21));`,
    });
    const { events } = record(sandbox);
    await sandbox.run();
    expect(events).toEqual(['log:<ADA> admin 42', 'finished']);
  });

  it('lets the app await async host functions with copied arguments and results', async () => {
    const seen: unknown[] = [];
    const sandbox = new MCPAppSandbox({
      isolation,
      code: `
        const arg = { n: 1, nested: { list: [1, 2, 3] } };
        const out = await fetchData(arg);
        out.items.push('changed in sandbox');
        console.log(JSON.stringify(out), JSON.stringify(arg));`,
    });
    const hostResult = { items: ['a', 'b'] };
    sandbox.expose('fetchData', async (query: unknown) => {
      seen.push(query);
      await new Promise((resolve) => setTimeout(resolve, 5));
      return hostResult;
    });
    const calls: unknown[][] = [];
    sandbox.on('api-call', (name, args, result) => calls.push([name, args, result]));
    const { events } = record(sandbox);
    await sandbox.run();
    expect(events[0]).toBe('log:{"items":["a","b","changed in sandbox"]} {"n":1,"nested":{"list":[1,2,3]}}');
    expect(hostResult.items).toEqual(['a', 'b']);
    expect(JSON.parse(JSON.stringify(seen))).toEqual([{ n: 1, nested: { list: [1, 2, 3] } }]);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.[0]).toBe('fetchData');
  });

  it('turns a throwing exposed function into api-error on the host and a catchable error in the app', async () => {
    const sandbox = new MCPAppSandbox({
      isolation,
      code: `
        try { await lookup('x'); } catch (e) {
          console.log('caught', e instanceof Error, e.name, e.message, e.stack === undefined);
        }`,
    });
    const apiErrors: unknown[][] = [];
    sandbox.expose('lookup', () => {
      throw new RangeError('no such record');
    });
    sandbox.on('api-error', (name, args, error) => apiErrors.push([name, args, (error as Error).message]));
    const { events } = record(sandbox);
    await sandbox.run();
    expect(apiErrors).toEqual([['lookup', ['x'], 'no such record']]);
    expect(events).toEqual(['log:caught true RangeError no such record true', 'finished']);
  });

  it('reports uncaught errors as error events', async () => {
    const sandbox = new MCPAppSandbox({
      isolation,
      code: `setTimeout(() => { throw new SyntaxError('late') }, 1); throw new Error('top');`,
    });
    const { events } = record(sandbox);
    await sandbox.run();
    expect(events).toEqual(['error:Error:top', 'error:SyntaxError:late', 'finished']);
  });

  it('refuses code that does not parse, or uses import(), before running it', async () => {
    for (const code of [
      'this is not javascript',
      'await import("node:fs")',
      '}); globalThis.x = 1; ((async function(){',
    ]) {
      const sandbox = new MCPAppSandbox({ isolation, code });
      const { events } = record(sandbox);
      const result = await sandbox.run();
      expect(result).toMatchObject({ status: 'crashed', crash: { reason: 'syntax' } });
      expect(events.at(-1)).toBe('crash:syntax');
    }
  });

  it('caps log output at maxLogBytes', async () => {
    const sandbox = new MCPAppSandbox({
      isolation,
      maxLogBytes: 1000,
      code: `for (let i = 0; i < 1000; i++) console.log('x'.repeat(100));`,
    });
    const { logs } = record(sandbox);
    await sandbox.run();
    const bytes = logs.filter((l) => l.level === 'log').reduce((n, l) => n + l.message.length, 0);
    expect(bytes).toBeLessThanOrEqual(1000);
    expect(logs.at(-1)?.message).toContain('log limit');
  });

  it('dispose() ends a running app and resolves run()', async () => {
    const sandbox = new MCPAppSandbox({ isolation, code: 'setInterval(() => {}, 10);' });
    const run = sandbox.run();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await sandbox.dispose();
    expect(await run).toMatchObject({ status: 'crashed', crash: { reason: 'disposed' } });
  });
});

describe('unhandled rejections in-process', () => {
  it('never reach the host as an uncaught exception, nor have their reason read', async () => {
    // Take vitest's own listeners away for the duration (they would read the reason themselves),
    // but not the sandbox's guard, which earlier in-process sandboxes may have installed already.
    const others = process.listeners('unhandledRejection').filter((fn) => fn.name !== 'onUnhandledRejection');
    for (const listener of others) process.off('unhandledRejection', listener);
    try {
      const sandbox = new MCPAppSandbox({
        isolation: 'in-process-trusted',
        code: `
          const reason = { toString() { console.log('COERCED ON THE HOST'); return 'x'; } };
          Promise.reject(reason);
          console.log('end');`,
      });
      const { events } = record(sandbox);
      expect(await sandbox.run()).toEqual({ status: 'finished' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(events).toEqual(['log:end', 'finished']);
    } finally {
      for (const listener of others) process.on('unhandledRejection', listener);
    }
  });
});

describe('MCPAppSandbox options', () => {
  it('validates names and refuses code generation in-process', () => {
    const sandbox = new MCPAppSandbox({ code: '' });
    expect(() => sandbox.expose('console', () => 1)).toThrow();
    expect(() => sandbox.expose('not a name', () => 1)).toThrow();
    expect(
      () => new MCPAppSandbox({ code: '', isolation: 'in-process-trusted', allowCodeGeneration: true }),
    ).toThrow();
  });

  it('allows eval only when the host opts in (process isolation)', async () => {
    for (const allowCodeGeneration of [false, true]) {
      const sandbox = new MCPAppSandbox({
        allowCodeGeneration,
        code: `try { console.log(eval('1 + 1')) } catch (e) { console.log(e.name) }`,
      });
      const { events } = record(sandbox);
      await sandbox.run();
      expect(events[0]).toBe(allowCodeGeneration ? 'log:2' : 'log:EvalError');
    }
  });

  it.each(MODES)('allows WebAssembly only when the host opts in (%s)', async (isolation) => {
    // The smallest valid module: magic number and version.
    const code = `try { new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])); console.log('wasm'); } catch (e) { console.log(e.name); }`;
    for (const allowWasm of [false, true]) {
      const sandbox = new MCPAppSandbox({ isolation, allowWasm, code });
      const { events } = record(sandbox);
      await sandbox.run();
      expect(events[0]).toBe(allowWasm ? 'log:wasm' : 'log:ReferenceError');
    }
  });

  it('builds the child argv with the permission model and no allow flags', () => {
    expect(permissionFlag('20.20.0')).toBe('--experimental-permission');
    expect(permissionFlag('22.1.0')).toBe('--permission');
    const argv = childArgv({ nodePath: 'node', memoryLimitMb: 64, allowWasm: false, version: '20.20.0' });
    expect(argv.slice(0, 6)).toEqual([
      'node',
      '--experimental-permission',
      '--no-warnings',
      '--max-old-space-size=64',
      '--disallow-code-generation-from-strings',
      '--no-expose-wasm',
    ]);
    expect(argv.some((a) => a.startsWith('--allow-'))).toBe(false);
  });

  it('exports an AppCodeError with a code', () => {
    expect(new AppCodeError('x').code).toBe('E_USAGE');
  });
});

describe.each(MODES)('allowWasm: shared memories are refused (%s)', (isolation) => {
  // Fails before: shared wasm memory gave the app a SharedArrayBuffer (its `buffer`) with Wasm on.
  const MAGIC = '0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00';
  const attempts = `
    const attempt = (name, fn) => {
      try { const r = fn(); console.log(name + ': ' + (r && r.buffer ? r.buffer.constructor.name : 'compiled')); }
      catch (e) { console.log(name + ': refused (' + e.message + ')'); }
    };
    attempt('js-api', () => new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }));
    attempt('defined', () => new WebAssembly.Module(new Uint8Array([${MAGIC}, 0x05, 0x04, 0x01, 0x03, 0x01, 0x01])));
    attempt('imported', () => new WebAssembly.Module(new Uint8Array([${MAGIC}, 0x02, 0x09, 0x01, 0x01, 0x6d, 0x01, 0x78, 0x02, 0x03, 0x01, 0x01])));
    try { await WebAssembly.compile(new Uint8Array([${MAGIC}, 0x05, 0x04, 0x01, 0x03, 0x01, 0x01])); console.log('async: compiled'); }
    catch (e) { console.log('async: refused'); }
    attempt('plain-memory', () => new WebAssembly.Memory({ initial: 1 }));
    attempt('plain-module', () => new WebAssembly.Module(new Uint8Array([${MAGIC}, 0x05, 0x03, 0x01, 0x00, 0x01])));
    console.log(String(new WebAssembly.Module(new Uint8Array([${MAGIC}])) instanceof WebAssembly.Module));`;

  it('from the JS API and inside modules, while plain memories and modules work', async () => {
    const sandbox = new MCPAppSandbox({ code: attempts, isolation, allowWasm: true });
    const { logs } = record(sandbox);
    expect(await sandbox.run()).toEqual({ status: 'finished' });
    expect(logs.map((l) => l.message)).toEqual([
      'js-api: refused (shared WebAssembly memory is not available in this sandbox)',
      'defined: refused (shared WebAssembly memory is not available in this sandbox)',
      'imported: refused (shared WebAssembly memory is not available in this sandbox)',
      'async: refused',
      'plain-memory: ArrayBuffer',
      'plain-module: compiled',
      'true',
    ]);
  });
});
