/**
 * The real MCP SDK Client against @modelcontextprotocol/server-everything running in `local`.
 */

import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { createLocalBackend } from '../src/index.js';
import { SandboxProcessTransport } from './sdk-transport.js';

const require = createRequire(import.meta.url);
const packageDir = realpathSync(
  dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
);
const serverEntry = join(packageDir, 'dist/index.js');
// pnpm keeps the package and its dependencies in one store directory: bind that read-only, so
// the server starts even when the checkout lives under a hidden directory such as a home.
const store = packageDir.slice(
  0,
  packageDir.lastIndexOf('/node_modules/.pnpm/') + '/node_modules/.pnpm'.length,
);

describe('server-everything under local, through the real SDK Client', () => {
  it('lists the tools, calls one, and sees exactly the allowlisted environment', {
    timeout: 60_000,
  }, async () => {
    // The host's TLS trust variables cross by design (tls-trust.test.ts); this case is about the rest.
    const box = await createLocalBackend({ hostTlsTrust: false }).create({
      sessionId: 'everything',
      env: { ALLOWED_ONE: 'one', ALLOWED_TWO: 'two=2' },
      ttlMs: 60_000,
      mounts: [{ hostPath: store, sandboxPath: store, mode: 'ro' }],
    });
    try {
      const proc = await box.exec(['node', serverEntry, 'stdio']);
      // No roots, sampling or elicitation: the server's tool list depends on them.
      const client = new Client({ name: 'backend-local-test', version: '0.0.0' }, { capabilities: {} });
      await client.connect(new SandboxProcessTransport(proc));
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(13);
      expect(tools.map((tool) => tool.name)).toContain('get-env');

      const echo = await client.callTool({ name: 'echo', arguments: { message: 'from the sandbox' } });
      expect(JSON.stringify(echo.content)).toContain('from the sandbox');

      const result = await client.callTool({ name: 'get-env', arguments: {} });
      const content = result.content as Array<{ type: string; text: string }>;
      const env = JSON.parse(content[0]!.text) as Record<string, string>;
      expect(Object.keys(env).sort()).toEqual([
        'ALLOWED_ONE',
        'ALLOWED_TWO',
        'HOME',
        'LANG',
        'PATH',
        'TMPDIR',
      ]);
      expect(env.ALLOWED_TWO).toBe('two=2');
      expect(env.HOME).toBe('/home/sandbox');
      expect(env.TMPDIR).toBe('/tmp');
      await client.close();
      await proc.exit;
    } finally {
      await box.close();
    }
  });
});
