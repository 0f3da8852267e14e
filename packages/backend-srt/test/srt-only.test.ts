import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger, Sandbox, SandboxEvent, SandboxSpec } from '@mcpsandbox/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSrtBackend } from '../src/index.js';

// What only srt's bubblewrap path needs held (the promises every OS backend keeps are in the
// shared suite, srt.promises.test.ts): srt's own shared /tmp/claude, and its mount rules.
const home = mkdtempSync(join(tmpdir(), 'srt-home-'));
const CANARY = 'canary-in-the-home-7f3a';
writeFileSync(join(home, 'secret.txt'), CANARY);
const warnings: string[] = [];
const logger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (message) => warnings.push(message),
  error: () => {},
};
const hostEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, WITHHELD_TOKEN: 'never-crosses' };
const open: Sandbox[] = [];
let upstream: Server;
let port = 0;

beforeAll(async () => {
  upstream = createServer((_req, res) => res.end('granted-upstream-ok'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  port = (upstream.address() as AddressInfo).port;
});
afterAll(() => {
  upstream.close();
  rmSync(home, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((box) => box.close()));
});

async function run(
  script: string | readonly string[],
  spec: Partial<SandboxSpec> = {},
): Promise<{ stdout: string; stderr: string; code: number | null; events: SandboxEvent[] }> {
  const events: SandboxEvent[] = [];
  const box = await createSrtBackend({ hostEnv, logger }).create({
    sessionId: 'promises',
    env: {},
    ttlMs: 60_000,
    onEvent: (event) => events.push(event),
    ...spec,
  });
  open.push(box);
  const proc = await box.exec(typeof script === 'string' ? [process.execPath, '-e', script] : script);
  await proc.closeStdin();
  const read = async (stream: AsyncIterable<Uint8Array>) => {
    let text = '';
    for await (const chunk of stream) text += Buffer.from(chunk).toString();
    return text;
  };
  const [stdout, stderr, status] = await Promise.all([read(proc.stdout), read(proc.stderr), proc.exit]);
  // One session at a time per process (srt has one proxy): each run ends its own.
  await box.close();
  return { stdout, stderr, code: status.code, events };
}

/** curl through the proxy the sandbox is given (Node 20's fetch ignores proxy variables). */
const fetchBoth = (granted: string, refused: string) => [
  '/bin/sh',
  '-c',
  'for url in "$0" "$1"; do curl -s -o /dev/null -w "%{http_code}\\n" --max-time 20 "$url" || echo "error"; done',
  granted,
  refused,
];

describe('srt backend: what only srt needs held, on Linux', () => {
  it("no writable path shared between sessions: a marker left in srt's shared /tmp/claude is not seen by the next session", async () => {
    // srt makes /tmp/claude writable in every sandbox it makes (its own default); made here if
    // absent, as srt's other users make it, so that srt binds it in.
    const shared = '/tmp/claude';
    const made = !existsSync(shared);
    if (made) mkdirSync(shared);
    const marker = `mcp-sandbox-marker-${process.pid}-${Date.now()}`;
    try {
      const write = await run(`const fs = require('fs');
        try { fs.writeFileSync(${JSON.stringify(`${shared}/${marker}`)}, 'left-by-session-one'); console.log('wrote'); } catch (e) { console.log('refused:' + e.code); }
        fs.writeFileSync(process.env.TMPDIR + '/own', 'x'); console.log('own tmp ok');`);
      // Control: the attack code ran (its own tmp is writable).
      expect(write.stdout).toContain('own tmp ok');
      expect(existsSync(join(shared, marker)), 'the marker reached the host').toBe(false);
      const read = await run(`const fs = require('fs');
        try { console.log('seen:' + fs.readFileSync(${JSON.stringify(`${shared}/${marker}`)}, 'utf8')); } catch (e) { console.log('absent:' + e.code); }`);
      expect(read.stdout).toContain('absent:');
      expect(read.stdout).not.toContain('left-by-session-one');
    } finally {
      rmSync(join(shared, marker), { force: true });
      if (made) rmSync(shared, { recursive: true, force: true });
    }
  });

  it('a refused host is reported as an event and with its hint', async () => {
    warnings.length = 0;
    const result = await run(fetchBoth(`http://127.0.0.1:${port}/`, 'http://example.com/'), {
      network: { allow: [`127.0.0.1:${port}`] },
    });
    expect(result.stdout.split('\n')[0]).toBe('200');
    expect(result.stdout.split('\n')[1]).toBe('403');
    expect(result.events).toContainEqual(
      expect.objectContaining({ type: 'egress-denied', host: 'example.com', port: 80, via: 'proxy' }),
    );
    expect(warnings.join('\n')).toContain('to allow it: --allow-net example.com');
  });

  it('refuses a mount whose target differs from its source, naming the alternative', async () => {
    await expect(
      createSrtBackend({ hostEnv, logger }).create({
        sessionId: 'x',
        env: {},
        ttlMs: 10_000,
        mounts: [{ hostPath: home, sandboxPath: '/data', mode: 'ro' }],
      }),
    ).rejects.toThrow(`--mount ${home}:${home}:ro`);
  });
});
