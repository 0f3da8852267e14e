import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from './cli.js';

// Issue 30, finding 10: one install cache serves both engines, whoever made the entry. As root,
// `local`'s install step runs as nobody and sealing leaves the `.bin` links nobody's; srt's
// package copy kept ownership (`cp -p`) and failed with "failed to preserve ownership" for every
// such server. Through the built binary: `local` makes the entry, then srt starts from it.
const dir = mkdtempSync(join(tmpdir(), 'srt-local-install-'));
// Anyone may pass (as root both engines run the sandbox as nobody); only the host writes it.
chmodSync(dir, 0o755);
const home = join(dir, 'home');
mkdirSync(home, { mode: 0o755 });
const cache = join(dir, 'npm-cache');
const env = { HOME: home, MCP_SANDBOX_PIN_LOCK: join(dir, 'npx-lock.json') };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const server = ['--', 'npx', '-y', '@modelcontextprotocol/server-memory@2026.8.31'];

describe('an npx -y install that local made, started by srt (one cache for both engines)', () => {
  it('lists the tools under local, then under srt from the same cache entry', async () => {
    for (const backend of ['local', 'srt']) {
      const { client, stderr } = await connect(
        ['--backend', backend, '--backend-option', `npmCacheDir=${cache}`, ...server],
        env,
      ).catch((error: Error) => {
        throw new Error(`--backend ${backend}: ${error.message}`);
      });
      try {
        const { tools } = await client.listTools();
        expect(
          tools.map((tool) => tool.name),
          `--backend ${backend}: ${stderr()}`,
        ).toContain('read_graph');
      } finally {
        await client.close();
      }
    }
  }, 240_000);
});
