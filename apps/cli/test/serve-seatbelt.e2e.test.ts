import { mkdtempSync, readdirSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Served, startServe, TOKEN } from './serve-helpers.js';

// `serve` on a Mac: the seatbelt engine gives each session its own sandbox (no one-session-per-
// process limit like srt's E_SRT_BUSY). Run here with a stand-in sandbox-exec that enforces
// nothing: what is checked is the engine's lifecycle per session, and the profile each got.

const BACKEND = fileURLToPath(new URL('./fixtures/seatbelt-standin-backend.mjs', import.meta.url));
const WHERE = fileURLToPath(new URL('./fixtures/where-server.mjs', import.meta.url));

interface Where {
  readonly home: string;
  readonly tmp: string;
  readonly profile: string;
}

async function where(
  url: string,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport; where: Where }> {
  const client = new Client({ name: 'seatbelt-serve', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  await client.connect(transport);
  const result = (await client.callTool({ name: 'where', arguments: {} })) as {
    content: Array<{ text: string }>;
  };
  return { client, transport, where: JSON.parse(result.content[0]?.text ?? '{}') as Where };
}

describe('serve with the seatbelt engine: a sandbox per session', () => {
  let served: Served;
  let state: string;
  beforeAll(async () => {
    state = realpathSync(mkdtempSync(join(tmpdir(), 'serve-seatbelt-')));
    served = await startServe(['--backend', BACKEND], [process.execPath, WHERE], { TMPDIR: state });
  }, 60_000);
  afterAll(async () => {
    await served?.stop();
  });

  it('two sessions at once: two session roots, each profile granting its own and not the other', async () => {
    const [a, b] = await Promise.all([where(served.url), where(served.url)]);
    const rootOf = (w: Where) => w.home.slice(0, w.home.lastIndexOf('/'));
    // The profile spells /tmp as macOS resolves it: /private/tmp.
    const spelled = (path: string) => path.replace(/^\/tmp\//, '/private/tmp/');
    expect(rootOf(a.where)).toMatch(/\/mcp-sandbox-sb-[^/]+$/);
    expect(rootOf(b.where)).toMatch(/\/mcp-sandbox-sb-[^/]+$/);
    expect(rootOf(a.where)).not.toBe(rootOf(b.where));
    expect(a.where.profile).toContain(`(subpath "${spelled(a.where.home)}")`);
    expect(a.where.profile).not.toContain(spelled(rootOf(b.where)));
    expect(b.where.profile).toContain(`(subpath "${spelled(b.where.home)}")`);
    expect(b.where.profile).not.toContain(spelled(rootOf(a.where)));
    expect(served.stderr()).not.toContain('E_SRT_BUSY');
    // A session's end removes its root; the other's stays while it lives.
    await a.transport.terminateSession();
    await a.client.close();
    for (let i = 0; i < 50 && readdirSync(state).some((n) => rootOf(a.where).endsWith(n)); i++) {
      await new Promise((done) => setTimeout(done, 100));
    }
    const names = readdirSync(state);
    expect(names.some((n) => rootOf(a.where).endsWith(n))).toBe(false);
    expect(names.some((n) => rootOf(b.where).endsWith(n))).toBe(true);
    await b.client.close();
  });
});
