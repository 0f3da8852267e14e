import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { markOwner, OWNER_FILE, recordSockets, sweepDead } from './sweep.js';

const parent = mkdtempSync(join(tmpdir(), 'srt-sweep-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

/** A pid that just ended. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
  return Number(child.stdout.trim());
}

/** A unix socket file left behind, as a killed socat leaves its listener's. */
function leftSocket(path: string): void {
  execFileSync('/usr/bin/python3', [
    '-c',
    'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])',
    path,
  ]);
}

describe.runIf(process.platform === 'linux')("the sweep of a killed bridge's leftovers", () => {
  it('removes the directories and recorded sockets of dead owners, and nothing of live ones or of others', () => {
    const dead = join(parent, 'mcp-sandbox-srt-dead');
    const live = join(parent, 'mcp-sandbox-srt-live');
    const foreign = join(parent, 'mcp-sandbox-srt-foreign');
    for (const dir of [dead, live, foreign]) mkdirSync(dir, { mode: 0o700 });
    // What a sandbox could have left in its home: a link out, which the removal must not follow.
    const outside = join(parent, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'keep'), 'x');
    symlinkSync(outside, join(dead, 'link'));
    const socket = join(parent, 'claude-http-0123456789abcdef.sock');
    const unrecorded = join(parent, 'claude-socks-fedcba9876543210.sock');
    leftSocket(socket);
    leftSocket(unrecorded);
    recordSockets(dead, [socket, '/etc/passwd', join(parent, 'outside', 'keep')]);
    writeFileSync(join(dead, OWNER_FILE), String(deadPid()));
    markOwner(live);
    // Not an owner file a sweep trusts: left alone.
    writeFileSync(join(foreign, OWNER_FILE), 'not a pid');

    sweepDead(parent, 'mcp-sandbox-srt-');

    expect(existsSync(dead)).toBe(false);
    expect(existsSync(socket)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(foreign)).toBe(true);
    expect(existsSync(unrecorded)).toBe(true);
    expect(existsSync(join(outside, 'keep'))).toBe(true);
    expect(existsSync('/etc/passwd')).toBe(true);
  });
});
