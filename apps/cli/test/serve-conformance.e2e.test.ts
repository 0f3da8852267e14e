import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { node22, runSuite, tokenProxy } from './conformance-runner.js';
import { EVERYTHING } from './helpers.js';
import { startServe, TOKEN } from './serve-helpers.js';
import { V2_SERVER } from './v2-helpers.js';

// The official conformance suite, scenario by scenario, against the SDKs' reference servers served
// directly over HTTP and the same servers over stdio behind `mcp-sandbox serve` (local backend, a
// real bubblewrap sandbox per session): every scenario that passes directly passes through serve.

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
let node = '';
beforeAll(async () => {
  node = await node22();
}, 300_000);

// A port the kernel just handed out, so it is not one a live connection holds: fixed ports in the
// ephemeral range (32768-60999) collide with the suite's own outgoing connections.
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

async function direct(command: string[], portVariable: string, env: Record<string, string> = {}) {
  const port = await freePort();
  const child = spawn(process.execPath, command, {
    env: { ...process.env, ...env, [portVariable]: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const fail = (why: string) => {
      child.kill('SIGKILL');
      reject(new Error(`the reference server ${why} on port ${port}; its stderr:\n${stderr}`));
    };
    const timer = setTimeout(() => fail('did not start in 20 s'), 20_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(`exited (${code ?? signal}) before listening`);
    });
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
      if (/listening/i.test(stderr)) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve();
      }
    });
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => child.kill('SIGTERM') };
}

async function compare(
  suite: '2025-11-25' | '2026-07-28',
  directRun: { url: string; stop: () => void },
  serveCommand: string[],
  serveArgs: string[],
  minimum: number,
) {
  // Both runs at once: each scenario mostly waits on its server, so the test takes one run's time.
  const served = await startServe(
    ['--mount', `${REPO}:ro`, '--max-sessions', '64', ...serveArgs],
    serveCommand,
  );
  const proxy = await tokenProxy(served.port, TOKEN);
  let directResults: Map<string, boolean>;
  let throughServe: Map<string, boolean>;
  try {
    [directResults, throughServe] = await Promise.all([
      runSuite(node, suite, directRun.url),
      runSuite(node, suite, proxy.url),
    ]);
  } finally {
    directRun.stop();
    proxy.close();
    await served.stop();
  }
  const rows = [...directResults].map(
    ([name, ok]) => `${name}\t${ok ? 'pass' : 'fail'}\t${throughServe.get(name) ? 'pass' : 'fail'}`,
  );
  if (process.env.CONFORMANCE_REPORT)
    writeFileSync(`${process.env.CONFORMANCE_REPORT}.${suite}.tsv`, `${rows.join('\n')}\n`);
  const passedDirect = [...directResults].filter(([, ok]) => ok).map(([name]) => name);
  expect(passedDirect.length).toBeGreaterThanOrEqual(minimum); // the control: the suite really ran and passed things
  const regressions = passedDirect.filter((name) => !throughServe.get(name));
  expect(regressions, rows.join('\n')).toEqual([]);
}

describe('conformance suite, direct vs through serve', () => {
  it('2025-11-25 (conformance 0.1.16): server-everything', async () => {
    const d = await direct([EVERYTHING, 'streamableHttp'], 'PORT');
    await compare('2025-11-25', d, ['node', EVERYTHING, 'stdio'], [], 11);
  }, 200_000);

  it('2026-07-28 (conformance 0.2.0-alpha.12): the v2 SDK server, modern era', async () => {
    const d = await direct([V2_SERVER], 'V2_HTTP_PORT', { MCP_ERA: 'modern' });
    await compare('2026-07-28', d, ['node', V2_SERVER], ['--env', 'MCP_ERA=modern'], 4);
  }, 200_000);
});
