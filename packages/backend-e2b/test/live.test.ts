import { createStderrLogger } from '@mcpsandbox/core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { createE2BBackend } from '../src/index.js';
import { bridgeSession, LineTransport } from './helpers.js';

// Runs against the real E2B cloud and costs a few cents of VM time; everything else in this
// package runs offline against the fake. Run it with: E2B_API_KEY=e2b_... pnpm test -- live
const key = process.env.E2B_API_KEY;
if (!key) {
  // Said out loud, not only in the test's title: a quiet reporter would hide why it did not run.
  process.stderr.write(
    'backend-e2b: the live E2B test is skipped because E2B_API_KEY is not set ' +
      '(run it with E2B_API_KEY=e2b_... npx vitest run test/live.test.ts in packages/backend-e2b)\n',
  );
}

describe('live E2B (only with E2B_API_KEY)', () => {
  it.skipIf(!key)(
    'server-everything, installed by npx in a real micro-VM, lists its tools through the bridge and the trace holds the traffic (skipped: set E2B_API_KEY to run against the real E2B cloud)',
    { timeout: 300_000 },
    async () => {
      const backend = createE2BBackend({ logger: createStderrLogger({ prefix: 'e2b-live' }) });
      const run = bridgeSession(backend, ['npx', '-y', '@modelcontextprotocol/server-everything@2026.8.31'], {
        ttlMs: 240_000,
      });
      const client = new Client({ name: 'e2b-live', version: '1.0.0' }, { capabilities: {} });
      await client.connect(new LineTransport(run.clientOut, run.clientIn));
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(13);
      const echo = await client.callTool({ name: 'echo', arguments: { message: 'from a Firecracker VM' } });
      expect(JSON.stringify(echo.content)).toContain('from a Firecracker VM');
      await client.close();
      const result = await run.session.done;
      expect(result.exitCode).toBe(0);
      const trace = run.trace();
      expect(trace.find((r) => r.type === 'sandbox-created')).toMatchObject({
        backend: 'e2b',
        isolation: 'microvm',
      });
      const messages = trace.filter((r) => r.type === 'message') as {
        dir: string;
        message?: { method?: string };
      }[];
      expect(messages.some((m) => m.dir === 'client->server' && m.message?.method === 'tools/list')).toBe(
        true,
      );
      expect(messages.filter((m) => m.dir === 'server->client').length).toBeGreaterThanOrEqual(3);
    },
  );
});
