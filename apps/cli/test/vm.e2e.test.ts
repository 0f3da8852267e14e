import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connect } from './helpers.js';

const require = createRequire(import.meta.url);
const HELLO_APP = join(dirname(require.resolve('@mcpsandbox/vm-sandbox')), '..', 'examples', 'hello-app.js');

describe('mcp-sandbox run --backend vm', () => {
  it('serves an untrusted JavaScript app to the real SDK client, with --env as data', async () => {
    const { client, stderr } = await connect(['--backend', 'vm', '--env', 'GREETING=Howdy', '--', HELLO_APP]);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['add', 'fail', 'hello']);
      const hello = await client.callTool({ name: 'hello', arguments: { name: 'Ada' } });
      expect(JSON.stringify(hello.content)).toContain('Howdy, Ada!');
      const failed = await client.callTool({ name: 'fail', arguments: {} });
      expect(failed.isError).toBe(true);
    } finally {
      await client.close();
    }
    // On this machine the worker runs inside the local OS sandbox, and the start-up line says so.
    expect(stderr()).toContain(
      'backend vm, isolation language: node:vm context in a locked-down Node child inside the local sandbox',
    );
  });
});

/** Peak resident size (VmHWM) of a live process, in MiB. */
function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1]) / 1024;
}

describe('mcp-sandbox run --backend vm: a hostile app cannot exhaust the bridge', () => {
  it('a 3 MB malformed tool result is a short error; the bridge stays small and alive', async () => {
    // Fails before: the SDK's validation error for `{content: [{}, {}, …]}` was about 1,170x the
    // result; the bridge ran out of heap (exit 134 at 4.4 GB RSS; here it is held at 1 GiB of heap).
    const dir = mkdtempSync(join(tmpdir(), 'vm-e2e-'));
    const app = join(dir, 'amplify.js');
    writeFileSync(
      app,
      `mcp.tool('amplify', 'malformed result', { type: 'object' }, () => ({ content: Array.from({ length: 750000 }, () => ({})) }));
       mcp.tool('ok', 'fine', { type: 'object' }, () => 'still here');`,
    );
    const { client, transport } = await connect(['--backend', 'vm', '--', app], {
      NODE_OPTIONS: '--max-old-space-size=1024',
    });
    try {
      // Bounded, so that a stuck bridge fails the test and is closed below.
      const result = await client.callTool({ name: 'amplify', arguments: {} }, undefined, {
        timeout: 30_000,
      });
      expect(result.isError).toBe(true);
      const text = JSON.stringify(result.content);
      expect(text).toContain('the app returned an invalid result: content: more than 10000 items');
      expect(text.length).toBeLessThan(5000);
      expect(JSON.stringify((await client.callTool({ name: 'ok', arguments: {} })).content)).toContain(
        'still here',
      );
      // Stated bound: the bridge's peak resident size stays under 400 MiB for a 3 MB result.
      const peak = peakRssMb(transport.pid as number);
      console.error(`bridge peak RSS: ${peak.toFixed(0)} MiB`);
      expect(peak).toBeLessThan(400);
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
