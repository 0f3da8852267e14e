import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, connect, spawnBin, traceRecords } from './helpers.js';

// A server whose tool names, descriptions, server name and stderr carry terminal escape sequences:
// ESC[8m (hidden text), OSC 0 (window title), OSC 52 (clipboard write), ESC[2J (clear screen) and
// the C1 CSI U+009B. None may reach the user's terminal raw (fails before the shared escaper).
const HOSTILE = fileURLToPath(new URL('./fixtures/hostile-server.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-escapes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ESC = 0x1b;
const BEL = 0x07;

/** Raw control bytes a terminal would obey: ESC, BEL, or a UTF-8 encoded C1 control. */
function rawControls(out: Buffer): string[] {
  const found: string[] = [];
  if (out.includes(ESC)) found.push('ESC');
  if (out.includes(BEL)) found.push('BEL');
  for (let i = 0; i < out.length - 1; i++) {
    if (out[i] === 0xc2 && (out[i + 1] as number) >= 0x80 && (out[i + 1] as number) <= 0x9f) {
      found.push('C1');
      break;
    }
  }
  return found;
}

const SERVER = ['--backend', 'none', '--env', 'HOSTILE_MODE=escapes', '--', process.execPath, HOSTILE];

describe('terminal escape sequences from a server', () => {
  it('control: the client itself gets the exact bytes, escapes included (the protocol is verbatim)', async () => {
    const c = await connect(SERVER);
    const names = (await c.client.listTools()).tools.map((t) => t.name);
    await c.client.close();
    expect(names.find((n) => n.startsWith('esc'))).toContain('\x1b]52;c;');
    expect(names.find((n) => n.startsWith('esc'))).toContain('\u009b31m');
  });

  it('inspect shows names and descriptions with every control escaped, as text and as JSON', async () => {
    const text = await spawnBin(['inspect', ...SERVER]).result;
    expect(text.code).toBe(0);
    expect(rawControls(text.stdout)).toEqual([]);
    expect(text.stdout.toString()).toContain('esc\\x1b[8mhidden');
    expect(rawControls(Buffer.from(text.stderr))).toEqual([]);
    expect(text.stderr).toContain('starting \\x1b[8mhidden');

    const json = await spawnBin(['inspect', '--json', ...SERVER]).result;
    expect(rawControls(json.stdout)).toEqual([]);
    const report = JSON.parse(json.stdout.toString()) as {
      tools: Array<{ name: string }>;
      server: { name: string };
    };
    // Still the same JSON values: a machine reading it gets the exact names.
    expect(report.tools.some((t) => t.name.includes('\x1b]52;c;'))).toBe(true);
    expect(report.server.name).toContain('\u009b31m');
  });

  it('run escapes forwarded stderr even into a pipe or file; the trace keeps the exact bytes', async () => {
    const trace = join(dir, 'run.jsonl');
    const c = await connect(['--trace', trace, ...SERVER]);
    await c.client.listTools();
    await c.client.callTool({ name: 'esc\x1b[8mhidden\x1b[0m', arguments: {} }).catch(() => undefined);
    await c.client.close();
    expect(c.stderr()).toContain('starting \\x1b[8mhidden');
    expect(rawControls(Buffer.from(c.stderr()))).toEqual([]);
    const stderrRecord = traceRecords(trace).find((r) => r.type === 'stderr');
    expect(String(stderrRecord?.text)).toContain('\x1b]0;pwned-title\x07');

    const summary = await spawnBin(['trace', trace]).result;
    expect(summary.code).toBe(0);
    expect(rawControls(summary.stdout)).toEqual([]);
    expect(summary.stdout.toString()).toContain('\\x1b');
    const json = await spawnBin(['trace', '--json', trace]).result;
    expect(rawControls(json.stdout)).toEqual([]);
  });

  it('under a real terminal (a pty), the server stderr arrives escaped; straight from the server it would not', () => {
    const pty = (command: string) =>
      execFileSync('script', ['-qec', command, '/dev/null'], {
        env: { ...process.env, HOSTILE_MODE: 'escapes' },
      });
    const node = JSON.stringify(process.execPath);
    // Control: the same server writing to the same pty puts the raw sequences on the terminal.
    const direct = pty(`test -t 2 && ${node} ${JSON.stringify(HOSTILE)} </dev/null`);
    expect(rawControls(direct)).toEqual(expect.arrayContaining(['ESC', 'BEL', 'C1']));
    const bridged = pty(
      `test -t 2 && ${node} ${JSON.stringify(BIN)} run --backend none --env HOSTILE_MODE -- ${node} ${JSON.stringify(HOSTILE)} </dev/null`,
    );
    expect(bridged.toString()).toContain('starting \\x1b[8mhidden');
    expect(bridged.toString()).toContain('\\x1b]52;c;');
    expect(rawControls(bridged)).toEqual([]);
  });

  it('ls shows server names from a config file with controls escaped', async () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, '.cursor'), { recursive: true });
    writeFileSync(
      join(home, '.cursor', 'mcp.json'),
      JSON.stringify({
        mcpServers: { 'evil\x1b]0;title\x07\u009b2J': { command: 'npx', args: ['-y', 'x\x1b[2J'] } },
      }),
    );
    const env = { PATH: process.env.PATH ?? '', HOME: home };
    const text = await spawnBin(['ls', '--client', 'cursor'], env).result;
    expect(text.stdout.toString()).toContain('evil\\x1b]0;title\\x07\\u009b2J');
    expect(rawControls(text.stdout)).toEqual([]);
    const json = await spawnBin(['ls', '--client', 'cursor', '--json'], env).result;
    expect(rawControls(json.stdout)).toEqual([]);
    expect(JSON.stringify(JSON.parse(json.stdout.toString()))).toContain('evil\\u001b]0;title');
  });

  it('doctor shows what a system tool printed with controls escaped', async () => {
    // A bwrap on PATH whose error output carries escapes, as a tampered or odd build could.
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, 'bwrap'),
      `#!/bin/sh\nif [ "$1" = --version ]; then echo "bwrap 0.9.0"; exit 0; fi\nprintf 'no \\033]0;pwned\\007 \\302\\2332J\\n' >&2\nexit 1\n`,
    );
    chmodSync(join(bin, 'bwrap'), 0o755);
    const result = await spawnBin(['doctor'], { PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: dir }).result;
    expect(result.stdout.toString()).toContain('no \\x1b]0;pwned\\x07 \\u009b2J');
    expect(rawControls(result.stdout)).toEqual([]);
  });
});
