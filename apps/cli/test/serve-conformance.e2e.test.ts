import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
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

async function direct(command: string[], env: Record<string, string>, port: number) {
  const child = spawn(process.execPath, command, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the reference server did not start')), 20_000);
    child.stderr?.on('data', (c: Buffer) => {
      if (/listening/i.test(c.toString())) {
        clearTimeout(timer);
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
    const port = 39000 + (process.pid % 1000);
    const d = await direct([EVERYTHING, 'streamableHttp'], { PORT: String(port) }, port);
    await compare('2025-11-25', d, ['node', EVERYTHING, 'stdio'], [], 11);
  }, 200_000);

  it('2026-07-28 (conformance 0.2.0-alpha.12): the v2 SDK server, modern era', async () => {
    const port = 40000 + (process.pid % 1000);
    const d = await direct([V2_SERVER], { V2_HTTP_PORT: String(port), MCP_ERA: 'modern' }, port);
    await compare('2026-07-28', d, ['node', V2_SERVER], ['--env', 'MCP_ERA=modern'], 4);
  }, 200_000);
});
