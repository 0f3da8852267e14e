import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SandboxBackend, type SandboxSpec, SPECIFICATION_VERSION } from '@mcpsandbox/core';
import { afterAll, describe, expect, it } from 'vitest';
import { childArgv, type LaunchedProcess, MCPAppSandbox, permissionFlag } from '../src/index.js';
import { spawnChild } from '../src/process-session.js';

const dir = mkdtempSync(join(tmpdir(), 'vm-sandbox-child-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the child process', () => {
  it('starts through a custom launcher with the locked-down argv', async () => {
    const seen: string[][] = [];
    const sandbox = new MCPAppSandbox({
      code: `console.log('via launcher')`,
      launcher: async (argv): Promise<LaunchedProcess> => {
        seen.push([...argv]);
        return spawnChild(argv);
      },
    });
    const logs: string[] = [];
    sandbox.on('log', (entry) => logs.push(entry.message));
    expect(await sandbox.run()).toEqual({ status: 'finished' });
    expect(logs).toEqual(['via launcher']);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain(permissionFlag());
    expect(seen[0]?.at(-2)).toBe('-e');
    // A kernel limit on the worker's data (RLIMIT_DATA): maxRssMb (256 by default) + 64 MiB.
    expect(seen[0]?.slice(0, 4)).toEqual([
      '/bin/sh',
      '-c',
      'ulimit -d "$0" && exec "$@"',
      String(320 * 1024),
    ]);
  });

  it('runs inside a hostBackend sandbox with no env and no network, and closes it', async () => {
    const specs: SandboxSpec[] = [];
    let closed = 0;
    const hostBackend: SandboxBackend = {
      specificationVersion: SPECIFICATION_VERSION,
      id: 'test-host',
      isolation: 'os',
      async create(spec) {
        specs.push(spec);
        return {
          id: 'test-host-1',
          exec: (command) => spawnChild(command),
          async close() {
            closed++;
          },
        };
      },
    };
    const sandbox = new MCPAppSandbox({ code: `console.log(await twice(21))`, hostBackend });
    sandbox.expose('twice', (n: number) => n * 2);
    const logs: string[] = [];
    sandbox.on('log', (entry) => logs.push(entry.message));
    expect(await sandbox.run()).toEqual({ status: 'finished' });
    expect(logs).toEqual(['42']);
    expect(specs[0]?.env).toEqual({});
    expect(specs[0]?.network).toEqual({ allow: [] });
    await sandbox.dispose();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBeGreaterThanOrEqual(1);
  });

  it('a crash of the child is a crash event, never a host crash', async () => {
    let child: LaunchedProcess | undefined;
    const sandbox = new MCPAppSandbox({
      code: 'setInterval(() => {}, 1000);',
      launcher: async (argv) => {
        child = await spawnChild(argv);
        return child;
      },
    });
    const run = sandbox.run();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await child?.kill('SIGKILL');
    expect(await run).toMatchObject({ status: 'crashed', crash: { reason: 'exited' } });
  });

  it('does not kill the child when the host itself is stalled', async () => {
    const sandbox = new MCPAppSandbox({ code: 'console.log(await block());', timeout: 300 });
    sandbox.expose('block', () => {
      const end = Date.now() + 2000;
      while (Date.now() < end) {}
      return 'host was busy';
    });
    const logs: string[] = [];
    sandbox.on('log', (entry) => logs.push(entry.message));
    expect(await sandbox.run()).toEqual({ status: 'finished' });
    expect(logs).toEqual(['host was busy']);
  });

  // One builtin call that node:vm's timeout cannot interrupt (about 50 s on Node 20).
  const STUCK_BUILTIN = 'const a = []; a.length = 2 ** 32 - 1; a.indexOf(1);';

  it("kills a child stuck in a builtin that ignores node:vm's timeout (wall-clock watchdog)", async () => {
    const sandbox = new MCPAppSandbox({ code: STUCK_BUILTIN, timeout: 300 });
    const started = Date.now();
    const result = await sandbox.run();
    expect(result).toMatchObject({ status: 'crashed', crash: { reason: 'timeout' } });
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('control: without the watchdog the same call outlives a 200 ms vm timeout', async () => {
    const source = `require('node:vm').runInNewContext(${JSON.stringify(STUCK_BUILTIN)}, {}, { timeout: 200 }); process.stdout.write('ended');`;
    const child = await spawnChild([process.execPath, '-e', source]);
    const outcome = await Promise.race([
      child.exit.then(() => 'ended'),
      new Promise((resolve) => setTimeout(() => resolve('still running'), 3000)),
    ]);
    await child.kill('SIGKILL');
    await child.exit;
    expect(outcome).toBe('still running');
  });

  // What an escape into the child's own realm would meet: the permission model and the flags.
  const PROBE = (marker: string) => `
    const results = {};
    const attempt = (name, fn) => { try { fn(); results[name] = 'allowed'; } catch (e) { results[name] = 'denied'; } };
    attempt('fs-write', () => require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x'));
    attempt('fs-read', () => require('node:fs').readFileSync('/etc/hostname'));
    attempt('child-process', () => require('node:child_process').execFileSync('true'));
    attempt('worker', () => new (require('node:worker_threads').Worker)('1', { eval: true }).terminate());
    attempt('eval', () => eval('1'));
    attempt('wasm', () => WebAssembly.Module);
    results.env = Object.keys(process.env).length;
    process.stdout.write(JSON.stringify(results));
  `;

  it('denies fs, child processes, workers, eval and wasm in the child realm itself', () => {
    const marker = join(dir, 'child-marker');
    const argv = childArgv({ nodePath: process.execPath, memoryLimitMb: 64, allowWasm: false });
    argv[argv.length - 1] = PROBE(marker);
    const [node, ...args] = argv;
    const out = JSON.parse(execFileSync(node as string, args, { env: {} }).toString()) as Record<
      string,
      unknown
    >;
    expect(out).toEqual({
      'fs-write': 'denied',
      'fs-read': 'denied',
      'child-process': 'denied',
      worker: 'denied',
      eval: 'denied',
      wasm: 'denied',
      env: 0,
    });
    expect(existsSync(marker)).toBe(false);
  });

  it('control: the same probe in a plain node child is allowed everything', () => {
    const marker = join(dir, 'control-marker');
    const out = JSON.parse(
      execFileSync(process.execPath, ['-e', PROBE(marker)], { env: {} }).toString(),
    ) as Record<string, unknown>;
    expect(out).toMatchObject({
      'fs-write': 'allowed',
      'fs-read': 'allowed',
      'child-process': 'allowed',
      worker: 'allowed',
      eval: 'allowed',
      wasm: 'allowed',
    });
    expect(existsSync(marker)).toBe(true);
  });
});
