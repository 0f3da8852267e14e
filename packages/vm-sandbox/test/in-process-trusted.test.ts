/**
 * In-process mode is not a security boundary; these are the cases where Node's own machinery in
 * the host touches app objects. Each hostile app runs in a separate host program
 * (test/fixtures/in-process-host.mjs, on the built package) that does one common host thing: a
 * logger on `uncaughtException`/`unhandledRejection`, or an AsyncLocalStorage around the run.
 * Before the hardening each of them read the canary from the host's environment, hung the host or
 * flooded its stderr (see the comments); now each is refused or defended as the README documents.
 */

import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createVmBackend, type Isolation, MCPAppSandbox } from '../src/index.js';

const HOST = fileURLToPath(new URL('./fixtures/in-process-host.mjs', import.meta.url));
const CANARY = `in-process-canary-${Math.random().toString(36).slice(2)}`;

interface HostRun {
  readonly report: Record<string, unknown> | undefined;
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
  readonly ms: number;
}

async function host(
  scenario: string,
  code: string,
  isolation: Isolation = 'in-process-trusted',
): Promise<HostRun> {
  const started = Date.now();
  const child = spawn(process.execPath, [HOST, scenario, code, isolation], {
    env: { PATH: process.env.PATH ?? '', MCPSBX_CANARY: CANARY },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code_ = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  const line = stdout.split('\n').find((l) => l.startsWith('{"scenario"'));
  return {
    report: line ? (JSON.parse(line) as Record<string, unknown>) : undefined,
    stdout,
    stderr,
    code: code_,
    ms: Date.now() - started,
  };
}

// The payload writes through the host's own `process` when it gets there.
const WRITE_CANARY = `const P = inspect.constructor('return process')(); P.stdout.write('ESCAPED ' + P.env.MCPSBX_CANARY + '\\n');`;
const INSPECT_REASON = `
  console.log('PAYLOAD-RAN');
  const reason = { [Symbol.for('nodejs.util.inspect.custom')](depth, options, inspect) {
    try { ${WRITE_CANARY} } catch (e) {}
    return 'r';
  } };`;

describe('in-process-trusted: the cases the README lists', () => {
  it('refuses to start under an AsyncLocalStorage (its store is on every promise the app makes)', async () => {
    // Fails before the refusal: the app walked the store's constructor chain to the host's Function
    // and read the canary.
    const attack = `
      console.log('PAYLOAD-RAN');
      const p = Promise.resolve(1);
      for (const s of Object.getOwnPropertySymbols(p)) {
        const v = p[s];
        if (v && typeof v === 'object') {
          const proc = v.constructor.constructor('return process')();
          proc.stdout.write('ESCAPED ' + proc.env.MCPSBX_CANARY + '\\n');
        }
      }`;
    const run = await host('als', attack);
    expect(run.stdout).not.toContain(CANARY);
    // The sandbox was created before the storage existed: its start is refused.
    expect(run.report?.logs).toEqual([]);
    expect(run.report?.result).toMatchObject({
      status: 'crashed',
      crash: { reason: 'unsafe-host', message: expect.stringMatching(/async hooks or an AsyncLocalStorage/) },
    });
    // Control: the same app runs (and fails) in process mode under the same host.
    const control = await host('als', attack, 'process');
    expect(control.report?.logs).toEqual(['PAYLOAD-RAN']);
    expect(control.stdout).not.toContain(CANARY);
  }, 30_000);

  it("a host unhandledRejection logger never hands the app the host's inspect (no Symbol.for)", async () => {
    // Fails before the hardening: util.inspect called the reason's inspect.custom with the host's
    // inspect function, whose constructor is the host's Function: canary read.
    const run = await host('logger', `${INSPECT_REASON} Promise.reject(reason);`);
    expect(run.stdout).not.toContain(CANARY);
    expect(run.report?.logs).toEqual(['PAYLOAD-RAN']);
    expect(run.report?.result).toEqual({ status: 'finished' });
  }, 30_000);

  it('an app-made Proxy cannot sit on a rejected promise that Node reads in the host (no Proxy)', async () => {
    // Fails before the hardening: Node read promise[kAsyncIdSymbol] after the entry; the trap threw
    // the reason, the host's uncaughtException logger inspected it: canary read.
    const attack = `${INSPECT_REASON}
      const proto = new Proxy(Promise.prototype, { get(t, k, r) { if (typeof k === 'symbol') throw reason; return Reflect.get(t, k, r); } });
      const p = Promise.reject(1);
      Object.setPrototypeOf(p, proto);`;
    for (const scenario of ['logger', 'plain']) {
      const run = await host(scenario, attack);
      expect(run.stdout).not.toContain(CANARY);
      expect(run.code).toBe(0);
      expect(run.report?.logs).toEqual(['PAYLOAD-RAN']);
    }
  }, 30_000);

  it("a trap that loops cannot hang the host past the app's timeout", async () => {
    // Fails before the hardening: the trap ran untimed in Node's rejection processing (3 s here,
    // under a 200 ms timeout), and the run was reported finished.
    const attack = `
      console.log('PAYLOAD-RAN');
      const proto = new Proxy(Promise.prototype, { get(t, k, r) { if (typeof k === 'symbol') { const end = Date.now() + 3000; while (Date.now() < end); } return Reflect.get(t, k, r); } });
      const p = Promise.reject(1);
      Object.setPrototypeOf(p, proto);`;
    const run = await host('plain', attack);
    expect(run.report?.logs).toEqual(['PAYLOAD-RAN']);
    expect(run.report?.ms as number).toBeLessThan(2500);
  }, 30_000);

  it('late-handled rejections stop the app instead of flooding the host with warnings', async () => {
    // Fails before the budget: one PromiseRejectionHandledWarning a promise (10,000 lines here).
    const attack = `
      console.log('PAYLOAD-RAN');
      for (let i = 0; i < 5000; i++) { const p = Promise.reject(1); setTimeout(() => p.catch(() => {}), 10); }`;
    const run = await host('plain', attack);
    expect(run.report?.logs).toEqual(['PAYLOAD-RAN']);
    expect(run.report?.result).toMatchObject({ status: 'crashed', crash: { reason: 'rejections' } });
    expect(
      run.stderr.split('\n').filter((l) => l.includes('PromiseRejectionHandledWarning')).length,
    ).toBeLessThanOrEqual(200);
  }, 30_000);
});

describe('in-process-trusted: an explicit opt-in', () => {
  it("refuses the old name 'in-process' and says what to use", () => {
    expect(() => new MCPAppSandbox({ code: '', isolation: 'in-process' as Isolation })).toThrow(
      /not a security boundary/,
    );
    expect(() => createVmBackend({ settings: { isolation: 'in-process' } })).toThrow(/in-process-trusted/);
  });

  it("is isolation 'none' in the vm backend", () => {
    expect(createVmBackend({ isolation: 'in-process-trusted' }).isolation).toBe('none');
    expect(createVmBackend({ settings: { isolation: 'in-process-trusted' } }).isolation).toBe('none');
    expect(createVmBackend().isolation).toBe('language');
  });

  it('refuses to be created inside AsyncLocalStorage.run() in this process', async () => {
    const storage = new AsyncLocalStorage<{ user: string }>();
    try {
      storage.run({ user: 'host' }, () => {
        expect(() => new MCPAppSandbox({ code: '', isolation: 'in-process-trusted' })).toThrow(/refused/);
      });
    } finally {
      storage.disable();
    }
    // Node turns the hook off on a later tick.
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Without it the same sandbox is created.
    expect(new MCPAppSandbox({ code: '', isolation: 'in-process-trusted' }).isolation).toBe(
      'in-process-trusted',
    );
  });

  it('stops an app when the host enables async hooks while it runs', async () => {
    const sandbox = new MCPAppSandbox({
      code: `setInterval(() => console.log('tick'), 20);`,
      isolation: 'in-process-trusted',
    });
    const run = sandbox.run();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const hook = createHook({ init() {} }).enable();
    try {
      expect(await run).toMatchObject({ status: 'crashed', crash: { reason: 'unsafe-host' } });
    } finally {
      hook.disable();
    }
  });
});
