import {
  AbortedError,
  type BackendModule,
  ProcessClosedError,
  type Sandbox,
  SandboxError,
  type SandboxEvent,
  SandboxFailureError,
  type SandboxSpec,
  UsageError,
} from '@mcpsandbox/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createBackend, createFakeBackend, type FakeBackendOptions, type FakeProgram } from '../src/index.js';
import { collect, settle, stillPending } from './helpers.js';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((box) => box.close()));
});

async function sandbox(options: FakeBackendOptions = {}, spec: Partial<SandboxSpec> = {}): Promise<Sandbox> {
  const box = await createFakeBackend(options).create({ sessionId: 't', env: {}, ttlMs: 60_000, ...spec });
  open.push(box);
  return box;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('createFakeBackend', () => {
  it('is the fake backend, without isolation, and loadable as a backend module', () => {
    const backend = createFakeBackend();
    expect(backend.id).toBe('fake');
    expect(backend.isolation).toBe('none');
    expect(backend.describe?.()).toMatch(/NOT SANDBOXED/);
    const module: BackendModule = { createBackend };
    expect(module.createBackend({ settings: {} }).id).toBe('fake');
  });

  it('reads highWaterMark from module settings and rejects a bad one', async () => {
    expect(() => createBackend({ settings: { highWaterMark: 'lots' } })).toThrow(UsageError);
    let written = 0;
    const box = await sandbox({
      settings: { highWaterMark: '8' },
      programs: {
        bytes: async (ctx) => {
          for (let i = 0; i < 100; i++) {
            await ctx.stdout.write('x');
            written++;
          }
          return 0;
        },
      },
    });
    const proc = await box.exec(['bytes']);
    await settle();
    expect(written).toBe(8);
    expect((await collect(proc.stdout)).length).toBe(100);
  });

  it('refuses to create when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      createFakeBackend().create({ sessionId: 't', env: {}, ttlMs: 1000 }, { signal: controller.signal }),
    ).rejects.toBeInstanceOf(AbortedError);
  });
});

describe('exec', () => {
  it('rejects an unknown command with E_COMMAND_NOT_FOUND', async () => {
    const box = await sandbox();
    const error = await box.exec(['no-such-program', 'x']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxFailureError);
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as SandboxError).code).toBe('E_COMMAND_NOT_FOUND');
    expect((error as Error).message).toContain('no-such-program');
  });

  it('does not take inherited object properties for programs', async () => {
    const box = await sandbox();
    for (const name of ['toString', '__proto__', 'constructor', 'hasOwnProperty']) {
      await expect(box.exec([name])).rejects.toMatchObject({ code: 'E_COMMAND_NOT_FOUND' });
    }
  });

  it('rejects an empty command with E_EXEC', async () => {
    const box = await sandbox();
    await expect(box.exec([])).rejects.toMatchObject({ code: 'E_EXEC' });
  });

  it('runs a registered program with its argv, cwd and exactly the spec plus per-exec env', async () => {
    process.env.FAKE_BACKEND_HOST_CANARY = 'host-only';
    try {
      let seen: unknown;
      const program: FakeProgram = (ctx) => {
        seen = { argv: ctx.argv, args: ctx.args, env: ctx.env, cwd: ctx.cwd };
        return 5;
      };
      const box = await sandbox({ programs: { mine: program } }, { env: { A: '1', SHARED: 'spec' } });
      const proc = await box.exec(['mine', '--flag', 'value'], {
        env: { B: '2', SHARED: 'exec' },
        cwd: '/work',
      });
      expect(await proc.exit).toEqual({ code: 5, signal: null });
      expect(seen).toEqual({
        argv: ['mine', '--flag', 'value'],
        args: ['--flag', 'value'],
        env: { A: '1', B: '2', SHARED: 'exec' },
        cwd: '/work',
      });
    } finally {
      delete process.env.FAKE_BACKEND_HOST_CANARY;
    }
  });

  it('lets a registered program replace a built-in of the same name', async () => {
    const box = await sandbox({ programs: { 'fake-mcp-server': async () => 9 } });
    const proc = await box.exec(['fake-mcp-server']);
    expect((await proc.exit).code).toBe(9);
  });

  it('reports a thrown error on stderr and exits with 1', async () => {
    const box = await sandbox({
      programs: {
        boom: async () => {
          throw new Error('kaboom');
        },
      },
    });
    const proc = await box.exec(['boom']);
    const stderr = collect(proc.stderr);
    expect(await proc.exit).toEqual({ code: 1, signal: null });
    expect((await stderr).toString()).toContain('kaboom');
  });

  it('maps exit codes as POSIX does (0–255; nothing is 0)', async () => {
    const box = await sandbox({
      programs: { code: async (ctx) => (ctx.args[0] === 'none' ? undefined : Number(ctx.args[0])) },
    });
    for (const [arg, code] of [
      ['none', 0],
      ['256', 0],
      ['257', 1],
      ['-1', 255],
      ['1.5', 1],
    ] as const) {
      const proc = await box.exec(['code', arg]);
      expect((await proc.exit).code).toBe(code);
    }
  });

  it('delivers stdout and stderr a program wrote before returning, then EOF', async () => {
    const box = await sandbox({
      programs: {
        talk: async (ctx) => {
          // Not awaited: the writes are queued before the program returns and still arrive.
          void ctx.stdout.write('one ');
          void ctx.stdout.write(new Uint8Array([116, 119, 111]));
          void ctx.stderr.write('err');
          return 0;
        },
      },
    });
    const proc = await box.exec(['talk']);
    expect((await proc.exit).code).toBe(0);
    expect((await collect(proc.stdout)).toString()).toBe('one two');
    expect((await collect(proc.stderr)).toString()).toBe('err');
  });

  it('makes tasks a program left running unwind once it returns', async () => {
    let leftover: unknown;
    let late: unknown;
    const box = await sandbox({
      programs: {
        leaky: (ctx) => {
          void ctx.sleep(60_000).then(
            () => undefined,
            async (error: unknown) => {
              leftover = error;
              late = await ctx.stdout.write('too late').catch((e: unknown) => e);
            },
          );
          return 0;
        },
      },
    });
    const proc = await box.exec(['leaky']);
    expect(await proc.exit).toEqual({ code: 0, signal: null });
    await settle();
    expect(leftover).toBeInstanceOf(ProcessClosedError);
    expect(String(leftover)).toContain('exited');
    expect(late).toBeInstanceOf(ProcessClosedError);
    expect((await collect(proc.stdout)).length).toBe(0);
  });

  it('copies written chunks, so a writer may reuse its buffer', async () => {
    const box = await sandbox({ programs: {} });
    const proc = await box.exec(['conformance-probe', 'echo']);
    const output = collect(proc.stdout);
    const buffer = Buffer.from('first\n');
    await proc.write(buffer);
    buffer.write('XXXXX\n');
    await proc.write(Buffer.from('second\n'));
    await proc.closeStdin();
    expect((await output).toString()).toBe('first\nsecond\n');
  });
});

describe('streams', () => {
  it('makes a program writing stdout wait while nobody reads (bounded buffering)', async () => {
    const highWaterMark = 4096;
    const chunk = 1024;
    let written = 0;
    const box = await sandbox({
      highWaterMark,
      programs: {
        flood: async (ctx) => {
          for (let i = 0; i < 1000; i++) {
            await ctx.stdout.write(new Uint8Array(chunk).fill(i % 256));
            written++;
          }
          return 0;
        },
      },
    });
    const proc = await box.exec(['flood']);
    await settle();
    // Accepted: at most the high-water mark, plus the chunk that crossed it.
    expect(written * chunk).toBeLessThanOrEqual(highWaterMark + chunk);
    expect(written).toBeGreaterThan(0);
    const all = await collect(proc.stdout);
    expect(all.length).toBe(1000 * chunk);
    for (let i = 0; i < 1000; i++) expect(all[i * chunk]).toBe(i % 256);
    expect(written).toBe(1000);
  });

  it('control: with a high-water mark above the output, the same program never waits', async () => {
    let written = 0;
    const box = await sandbox({
      highWaterMark: 2_000_000,
      programs: {
        flood: async (ctx) => {
          for (let i = 0; i < 1000; i++) {
            await ctx.stdout.write(new Uint8Array(1024));
            written++;
          }
          return 0;
        },
      },
    });
    const proc = await box.exec(['flood']);
    await settle();
    expect(written).toBe(1000);
    await collect(proc.stdout);
  });

  it('makes write() wait while the program does not read stdin', async () => {
    const gate = deferred();
    const box = await sandbox({
      highWaterMark: 1000,
      programs: {
        lazy: async (ctx) => {
          await gate.promise;
          let total = 0;
          for await (const chunk of ctx.stdin) total += chunk.length;
          await ctx.stdout.write(String(total));
          return 0;
        },
      },
    });
    const proc = await box.exec(['lazy']);
    await proc.write(new Uint8Array(1000));
    const second = proc.write(new Uint8Array(10));
    const third = proc.write(new Uint8Array(10));
    await settle();
    expect(await stillPending(second, 50)).toBe('pending');
    gate.resolve();
    await second;
    await third;
    await proc.closeStdin();
    expect((await collect(proc.stdout)).toString()).toBe('1020');
  });

  it('fails writes once the process has exited, and after closeStdin', async () => {
    const box = await sandbox({ programs: { quit: () => 0 } });
    const proc = await box.exec(['quit']);
    await proc.exit;
    await expect(proc.write(Buffer.from('x'))).rejects.toBeInstanceOf(ProcessClosedError);
    const echo = await box.exec(['conformance-probe', 'echo']);
    await echo.closeStdin();
    await expect(echo.write(Buffer.from('x'))).rejects.toBeInstanceOf(ProcessClosedError);
  });

  it('fails a program write once the reader left its loop (EPIPE)', async () => {
    let failure: unknown;
    const box = await sandbox({
      programs: {
        chatty: async (ctx) => {
          try {
            for (;;) await ctx.stdout.write('line\n');
          } catch (error) {
            failure = error;
            return 3;
          }
        },
      },
    });
    const proc = await box.exec(['chatty']);
    for await (const _chunk of proc.stdout) break;
    expect((await proc.exit).code).toBe(3);
    expect(failure).toBeInstanceOf(ProcessClosedError);
    expect(String(failure)).toMatch(/EPIPE/);
  });
});

describe('signals', () => {
  it('SIGTERM ends a program that does not handle it; its pending sleep rejects', async () => {
    let unwound: unknown;
    const box = await sandbox({
      programs: {
        sleeper: async (ctx) => {
          await ctx.stdout.write('ready\n');
          try {
            await ctx.sleep(Number.POSITIVE_INFINITY);
          } catch (error) {
            unwound = error;
          }
          return 0;
        },
      },
    });
    const proc = await box.exec(['sleeper']);
    const output = collect(proc.stdout);
    await proc.kill();
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGTERM' });
    // What was written before the kill is still readable.
    expect((await output).toString()).toBe('ready\n');
    await settle();
    expect(unwound).toBeInstanceOf(ProcessClosedError);
  });

  it('a SIGTERM handler keeps the program running; SIGKILL still ends it', async () => {
    let terms = 0;
    let aborted = false;
    const box = await sandbox({
      programs: {
        stubborn: async (ctx) => {
          ctx.onSignal('SIGTERM', () => {
            terms++;
          });
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
          });
          await ctx.sleep(Number.POSITIVE_INFINITY);
          return 0;
        },
      },
    });
    const proc = await box.exec(['stubborn']);
    await settle();
    await proc.kill('SIGTERM');
    await proc.kill('SIGTERM');
    expect(terms).toBe(2);
    expect(await stillPending(proc.exit, 100)).toBe('pending');
    await proc.kill('SIGKILL');
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(aborted).toBe(true);
  });

  it('an unsubscribed SIGTERM handler no longer protects the program', async () => {
    const box = await sandbox({
      programs: {
        once: async (ctx) => {
          const off = ctx.onSignal('SIGTERM', () => undefined);
          off();
          await ctx.sleep(Number.POSITIVE_INFINITY);
          return 0;
        },
      },
    });
    const proc = await box.exec(['once']);
    await settle();
    await proc.kill('SIGTERM');
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('kill after exit is a no-op', async () => {
    const box = await sandbox();
    const proc = await box.exec(['conformance-probe', 'exit', '4']);
    void collect(proc.stdout);
    expect(await proc.exit).toEqual({ code: 4, signal: null });
    await proc.kill('SIGKILL');
    expect(await proc.exit).toEqual({ code: 4, signal: null });
  });
});

describe('close and TTL', () => {
  it('close() kills every running process with SIGKILL, once, and refuses new ones', async () => {
    const box = await sandbox();
    const a = await box.exec(['conformance-probe', 'hang']);
    const b = await box.exec(['conformance-probe', 'sleep']);
    await Promise.all([box.close(), box.close()]);
    expect(await a.exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await b.exit).toEqual({ code: null, signal: 'SIGKILL' });
    await expect(box.exec(['conformance-probe', 'echo'])).rejects.toMatchObject({
      code: 'E_SANDBOX_CLOSED',
    });
  });

  it('the TTL reaps processes, reports the expiry, and closes the sandbox', async () => {
    const events: SandboxEvent[] = [];
    const box = await sandbox({}, { ttlMs: 50, onEvent: (event) => events.push(event) });
    const proc = await box.exec(['conformance-probe', 'hang']);
    expect(await proc.exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(events).toEqual([{ type: 'ttl-expired', ttlMs: 50 }]);
    await expect(box.exec(['conformance-probe', 'echo'])).rejects.toMatchObject({
      code: 'E_SANDBOX_CLOSED',
    });
  });
});
