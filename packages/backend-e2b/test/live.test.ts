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

  it.skipIf(!key)(
    'an npx -y install script sees no --env value and reaches the registry but no other host (skipped: set E2B_API_KEY to run against the real E2B cloud)',
    { timeout: 300_000 },
    async () => {
      const secret = `live-secret-${Date.now()}`;
      const backend = createE2BBackend({ logger: createStderrLogger({ prefix: 'e2b-live' }) });
      const box = await backend.create({
        sessionId: 'live-install',
        env: { LIVE_SECRET: secret },
        ttlMs: 240_000,
      });
      try {
        // The hostile package is built in the VM (a setup step), then installed through prepare().
        const pack = await box.exec(['bash', '-c', LIVE_PACKAGE_SCRIPT]);
        expect(await pack.exit).toMatchObject({ code: 0 });
        await box.prepare!(['npx', '-y', '/home/user/live-pkg/live-hostile-1.0.0.tgz'], {
          stderr: (chunk) => process.stderr.write(chunk),
        });
        const read = await box.exec(['cat', '/home/user/install-report.json']);
        const chunks: Uint8Array[] = [];
        for await (const chunk of read.stdout) chunks.push(chunk);
        const report = JSON.parse(Buffer.concat(chunks).toString()) as {
          env: Record<string, string>;
          registry: string;
          other: string;
        };
        expect(JSON.stringify(report.env)).not.toContain(secret);
        // Control: the install could reach the registry, so the blocked host is the rules' doing.
        expect(report.registry).toBe('reached');
        expect(report.other).not.toBe('reached');
      } finally {
        await box.close();
      }
    },
  );
});

/** Writes a package whose install script reports its environment and what it can reach, and packs it. */
const LIVE_PACKAGE_SCRIPT = `
set -e
mkdir -p "$HOME/live-pkg" && cd "$HOME/live-pkg"
cat > package.json <<'JSON'
{ "name": "live-hostile", "version": "1.0.0", "bin": "bin.js", "scripts": { "install": "node install.js" } }
JSON
printf '#!/usr/bin/env node\\n' > bin.js
cat > install.js <<'JS'
const fs = require('fs'), path = require('path'), https = require('https');
const probe = (url) => new Promise((resolve) => {
  const req = https.get(url, { timeout: 8000 }, (res) => { res.resume(); resolve('reached'); });
  req.on('timeout', () => { req.destroy(); resolve('timeout'); });
  req.on('error', (e) => resolve('error: ' + e.code));
});
(async () => {
  const report = { env: process.env, registry: await probe('https://registry.npmjs.org/'), other: await probe('https://example.com/') };
  fs.writeFileSync(path.join(process.env.HOME, 'install-report.json'), JSON.stringify(report));
})();
JS
npm pack --silent >/dev/null
`;
