import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, spawnBin } from './helpers.js';
import { startServe, TOKEN } from './serve-helpers.js';

// Secrets leaked by a hostile or careless server the ways real libraries encode them, through the
// built binary: none of them may reach the trace or stderr. The check is an independent decoder
// (JSON strings, percent-decoding, base64 at every offset), so a form that is only partly
// redacted, or redacted in one spelling and not another, still counts as a leak.

const LEAKY = fileURLToPath(new URL('./fixtures/leaky-server.mjs', import.meta.url));
const LEAKY_PY = fileURLToPath(new URL('./fixtures/leaky-server.py', import.meta.url));
const TINY = fileURLToPath(new URL('./fixtures/tiny-server.mjs', import.meta.url));
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
/** Characters every encoder treats differently: space, non-ASCII, astral, & < > = ' / +. */
const SECRET = "pä ss/wörd&<tok>=😀+9f3b'x";
const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-redaction-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every spelling of `secret` this decoder can recover from `text`, or none. */
function recovered(text: string, secret: string): string[] {
  const found: string[] = [];
  const strings = [text];
  for (const literal of text.match(/"(?:[^"\\]|\\.)*"/g) ?? []) {
    try {
      strings.push(JSON.parse(literal) as string);
    } catch {
      // not a JSON string after all
    }
  }
  // JSON escapes outside quotes too (a stderr line), and escapes of escapes, twice more.
  for (let round = 0; round < 2; round++) strings.push(...strings.map(unescapeJson));
  const bytes = Buffer.from(secret);
  for (const s of strings) {
    if (s.includes(secret)) found.push(`literal in ${JSON.stringify(s.slice(0, 80))}`);
    for (const run of s.match(/[A-Za-z0-9%+._~!*'()-]{4,}/g) ?? []) {
      try {
        if (decodeURIComponent(run.replace(/\+/g, ' ')).includes(secret)) found.push(`percent: ${run}`);
      } catch {}
    }
    for (const run of s.match(/[A-Za-z0-9+/_-]{8,}/g) ?? []) {
      for (let shift = 0; shift < 4; shift++) {
        if (Buffer.from(run.slice(shift), 'base64').includes(bytes)) found.push(`base64: ${run}`);
      }
    }
  }
  return found;
}

function unescapeJson(s: string): string {
  const simple: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
  return s.replace(/\\(?:u([0-9a-fA-F]{4})|(.))/g, (_, hex: string | undefined, c: string) =>
    hex ? String.fromCharCode(Number.parseInt(hex, 16)) : (simple[c] ?? c),
  );
}

function text(result: unknown): string {
  return (result as { content: Array<{ text: string }> }).content.map((c) => c.text).join('\n');
}

describe('secrets are redacted by meaning, not by bytes', () => {
  it('the oracle finds every form the fixtures write (control)', () => {
    const enc = (t: string) => Buffer.from(t).toString('base64');
    expect(recovered(`x ${enc(`alice:${SECRET}`)} y`, SECRET)).not.toEqual([]);
    expect(recovered(`"k":${JSON.stringify(SECRET).replace('ä', '\\u00e4')}`, SECRET)).not.toEqual([]);
    expect(recovered(`?k=${encodeURIComponent(SECRET)}`, SECRET)).not.toEqual([]);
    expect(recovered('nothing here', SECRET)).toEqual([]);
  });

  it.each([
    ['Go/Gson escapes (\\u0026, \\u003c, \\u00e4, \\/, surrogate pairs)', 'go'],
    ['percent-encoding (lower-case hex, + for space)', 'percent'],
    ['base64 of user:secret (Basic auth)', 'basic'],
    ['base64url of Bearer secret', 'bearer'],
    ['base64 of KEY=secret inside a longer blob', 'keyvalue'],
  ])(
    '%s reaches neither the trace nor stderr',
    async (_, form) => {
      const trace = join(dir, `${form}.jsonl`);
      const c = await connect(
        ['--backend', 'none', '--env', 'LEAKED_SECRET', '--trace', trace, '--', process.execPath, LEAKY],
        { LEAKED_SECRET: SECRET },
      );
      let result = '';
      try {
        result = text(await c.client.callTool({ name: form, arguments: {} }));
        await new Promise((r) => setTimeout(r, 300));
      } finally {
        await c.client.close();
      }
      // The client asked for it: it gets the form, unredacted.
      expect(recovered(result, SECRET)).not.toEqual([]);
      const written = readFileSync(trace, 'utf8');
      expect(written).toContain('[REDACTED]');
      expect(recovered(written, SECRET)).toEqual([]);
      expect(c.stderr()).toContain('leaky: ');
      expect(c.stderr()).toContain('[REDACTED]');
      expect(recovered(c.stderr(), SECRET)).toEqual([]);
    },
    60_000,
  );

  it("Python's \\u escapes (non-ASCII and surrogate pairs) reach neither the trace nor stderr", async () => {
    const trace = join(dir, 'python.jsonl');
    const c = await connect(
      ['--backend', 'none', '--env', 'LEAKED_SECRET', '--trace', trace, '--', 'python3', LEAKY_PY],
      { LEAKED_SECRET: SECRET },
    );
    let result = '';
    try {
      result = text(await c.client.callTool({ name: 'leak', arguments: {} }));
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      await c.client.close();
    }
    expect(result).toBe(`the secret is ${SECRET}`);
    const written = readFileSync(trace, 'utf8');
    expect(written).toContain('the secret is [REDACTED]');
    expect(recovered(written, SECRET)).toEqual([]);
    expect(c.stderr()).toContain('config {"api_key": "[REDACTED]"}');
    expect(recovered(c.stderr(), SECRET)).toEqual([]);
  }, 60_000);
});

describe("the bridge's own messages", () => {
  it('a refused call to a tool named after the secret (base64) is logged with the name redacted', async () => {
    const trace = join(dir, 'logged.jsonl');
    const c = await connect(
      [
        '--backend',
        'none',
        '--env',
        'LEAKED_SECRET',
        '--deny-tool',
        'x-*',
        '--trace',
        trace,
        '--',
        process.execPath,
        TINY,
      ],
      { LEAKED_SECRET: SECRET },
    );
    const name = `x-${Buffer.from(`k:${SECRET}`).toString('base64url')}`;
    try {
      await expect(c.client.callTool({ name, arguments: {} })).rejects.toThrow(/not allowed/);
    } finally {
      await c.client.close();
    }
    expect(c.stderr()).toContain('refused a call to tool "x-');
    expect(recovered(c.stderr(), SECRET)).toEqual([]);
    expect(recovered(readFileSync(trace, 'utf8'), SECRET)).toEqual([]);
  }, 60_000);
});

describe('a secret too short to redact', () => {
  it('is named (never shown) in a warning, and the session runs', async () => {
    const run = spawnBin(
      ['run', '--backend', 'none', '--env', 'API_KEY=q7z', '--env', 'DEBUG=1', '--', process.execPath, TINY],
      { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/' },
    );
    run.child.stdin.end();
    const { code, stderr } = await run.result;
    expect(code).toBe(0);
    expect(stderr).toMatch(/warning: API_KEY: value shorter than 4 characters, so it is not redacted/);
    // A value that does not look like a credential is not warned about; neither value is shown.
    expect(stderr).not.toContain('DEBUG');
    expect(stderr).not.toContain('q7z');
  }, 60_000);
});

describe('serve: the bearer token is a secret like any other', () => {
  it('sent inside a client message, it reaches neither the trace nor stderr', async () => {
    const trace = join(dir, 'serve.jsonl');
    const served = await startServe(['--mount', `${REPO}:ro`, '--trace', trace], ['node', TINY]);
    try {
      const client = new Client({ name: 'token-leaker', version: '1.0.0' }, { capabilities: {} });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(served.url), {
          requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
        }),
      );
      const basic = Buffer.from(`me:${TOKEN}`).toString('base64');
      const result = await client.callTool({
        name: 'greet',
        arguments: {
          note: `my token is ${TOKEN}`,
          header: `Basic ${basic}`,
          url: `?t=${encodeURIComponent(TOKEN)}`,
        },
      });
      expect(text(result)).toBe('called greet');
      await client.close();
    } finally {
      await served.stop();
    }
    const written = readFileSync(trace, 'utf8');
    expect(written).toContain('"tools/call"');
    expect(recovered(written, TOKEN)).toEqual([]);
    expect(recovered(served.stderr(), TOKEN)).toEqual([]);
  }, 60_000);
});
