/**
 * The child inside the `local` OS sandbox (bubblewrap). This closes the two gaps the permission
 * model leaves to code that escaped into the child's realm: loopback TCP and signalling the parent.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { createLocalBackend } from '@mcpsandbox/backend-local';
import type { SandboxBackend, SandboxProcess } from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childArgv, MCPAppSandbox } from '../src/index.js';
import { spawnChild, treeRss } from '../src/process-session.js';

let server: Server;
let port = 0;
let connections = 0;
beforeAll(async () => {
  server = createServer((socket) => {
    connections++;
    socket.end('hello from the host\n');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as { port: number }).port;
});
afterAll(() => {
  server.close();
});

// Runs in the child's own realm, as code that escaped the context would.
const ESCAPED = (target: number) => `
  const out = (s) => process.stdout.write(s + '\\n');
  let signalled = 'denied';
  try { process.kill(process.ppid, 0); signalled = process.ppid > 1 ? 'allowed' : 'no parent'; } catch {}
  out('signal-parent:' + signalled);
  const socket = require('node:net').connect(${target}, '127.0.0.1');
  socket.on('data', () => { out('loopback:connected'); process.exit(0); });
  socket.on('error', () => { out('loopback:refused'); process.exit(0); });
  setTimeout(() => { out('loopback:timeout'); process.exit(0); }, 3000);
`;

async function collect(proc: SandboxProcess): Promise<string> {
  let text = '';
  for await (const chunk of proc.stdout) text += Buffer.from(chunk).toString();
  await proc.exit;
  return text;
}

function escapedArgv(): string[] {
  const argv = childArgv({ nodePath: process.execPath, memoryLimitMb: 64, allowWasm: false });
  argv[argv.length - 1] = ESCAPED(port);
  return argv;
}

describe('process isolation inside the local backend', () => {
  it('runs an app with exposed functions in a child inside bubblewrap', async () => {
    const sandbox = new MCPAppSandbox({
      code: 'console.log(await twice(21));',
      hostBackend: createLocalBackend(),
    });
    sandbox.expose('twice', (n: number) => n * 2);
    const logs: string[] = [];
    sandbox.on('log', (entry) => logs.push(entry.message));
    expect(await sandbox.run()).toEqual({ status: 'finished' });
    expect(logs).toEqual(['42']);
  });

  it('control: escaped code in a plain locked-down child reaches loopback and can signal its parent', async () => {
    const before = connections;
    const output = await collect(await spawnChild(escapedArgv()));
    expect(output).toContain('loopback:connected');
    expect(output).toContain('signal-parent:allowed');
    expect(connections).toBe(before + 1);
  });

  it('escaped code in a child inside the local backend reaches neither', async () => {
    const box = await createLocalBackend().create({
      sessionId: 'vm-local-test',
      env: {},
      ttlMs: 60_000,
      network: { allow: [] },
    });
    try {
      const before = connections;
      const output = await collect(await box.exec(escapedArgv()));
      expect(output).toMatch(/loopback:(refused|timeout)/);
      expect(output).not.toContain('signal-parent:allowed');
      expect(connections).toBe(before);
    } finally {
      await box.close();
    }
  });
});

describe('the memory cap inside the local backend', () => {
  it('holds for the real worker, not only for bwrap: peak RSS of the whole process tree stays bounded', async () => {
    // Fails before: the watchdog read bwrap's RSS and the worker's own report was ignored when a
    // pid existed; typed arrays took the worker to 1.5 GiB under a 192 MiB cap.
    const local = createLocalBackend();
    const pids: number[] = [];
    // The local backend, with the launched process's pid noted for the measurement.
    const hostBackend: SandboxBackend = {
      ...local,
      async create(spec) {
        const box = await local.create(spec);
        return {
          id: box.id,
          async exec(command, options) {
            const proc = (await box.exec(command, options)) as SandboxProcess & { pid?: number };
            if (proc.pid !== undefined) pids.push(proc.pid);
            return proc;
          },
          close: () => box.close(),
        };
      },
    };
    const maxRssMb = 192;
    const sandbox = new MCPAppSandbox({
      // Past the kernel's data limit an allocation fails; the app stays alive for the watchdog.
      code: `const keep = []; try { for (let i = 0; i < 16; i++) { keep.push(new Uint8Array(64 * 1024 * 1024).fill(1)); await new Promise((r) => setTimeout(r, 20)); } } catch {} console.log('allocated ' + keep.length * 64 + ' MiB'); setTimeout(() => {}, 5000);`,
      hostBackend,
      memoryLimitMb: 64,
      maxRssMb,
      timeout: 20_000,
    });
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const pid = pids[0];
        if (pid !== undefined) peak = Math.max(peak, await treeRss(pid));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const logs: string[] = [];
    sandbox.on('log', (entry) => logs.push(entry.message));
    const result = await sandbox.run();
    sampling = false;
    await sampler;
    await sandbox.dispose();
    expect(pids).toHaveLength(1);
    expect(result).toMatchObject({ status: 'crashed', crash: { reason: 'memory' } });
    expect(logs).not.toContain('allocated 1024 MiB');
    // Stated bound: the cap, the kernel limit's headroom (64 MiB) and the node binary's shared pages.
    console.error(
      `peak RSS of the sandbox's process tree: ${(peak / 2 ** 20).toFixed(0)} MiB (cap ${maxRssMb} MiB)`,
    );
    expect(peak).toBeGreaterThan(64 * 2 ** 20);
    expect(peak).toBeLessThan((maxRssMb + 128) * 2 ** 20);
  }, 60_000);
});
