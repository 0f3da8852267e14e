import { readFileSync } from 'node:fs';
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '@mcpsandbox/backend-e2b/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { line, spawnBin, waitFor } from './helpers.js';

// The real binary against the offline fake of E2B, whose envd behaves as a given envd version
// does and, armed, as a compromised one.
const fakes: FakeE2B[] = [];
let fake: FakeE2B;
beforeAll(async () => {
  fake = await startFakeE2B();
  fakes.push(fake);
});
afterAll(async () => {
  for (const f of fakes) await f.close();
});

const env = (f: FakeE2B) => ({
  PATH: process.env.PATH ?? '',
  E2B_API_KEY: FAKE_API_KEY,
  E2B_API_URL: f.apiUrl,
  E2B_SANDBOX_URL: f.sandboxUrl,
});

function peakMiB(pid: number): number {
  const match = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(match?.[1]) / 1024);
}

const COUNT = 500_000;
const NOTE = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${'a'.repeat(COUNT)}"}}\n`;

/** Peak RSS of the bridge while envd sends NOTE in frames of `bytesPerFrame` bytes. */
async function streamNote(bytesPerFrame: number, tag: string): Promise<number> {
  fake.attack({ match: tag, frame: { kind: 'output', stream: 'stdout', text: NOTE, bytesPerFrame } });
  const bridge = spawnBin(
    ['run', '--backend', 'e2b', '--', 'sh', '-c', `cat >/dev/null # ${tag}`],
    env(fake),
  );
  await waitFor(() => bridge.stdoutSoFar().includes(10), 90_000, 'the streamed line');
  const peak = peakMiB(bridge.child.pid as number);
  bridge.child.stdin.end();
  const result = await bridge.result;
  expect(result.stdout.toString()).toBe(NOTE);
  expect(result.code).toBe(0);
  return peak;
}

describe('envd output in one-byte frames (a compromised envd)', () => {
  // Fails before PendingBytes (198 vs 99 MiB): each one-byte frame stayed an object of
  // its own until the newline.
  it('costs the bridge about what the same line in large frames does', { timeout: 180_000 }, async () => {
    const control = await streamNote(64 * 1024, 'frames-large');
    const tiny = await streamNote(1, 'frames-tiny');
    // Before: 99 MiB above the control at 500 000 frames; after: 20-46 (transient garbage, not retention).
    expect(tiny - control).toBeLessThan(60);
  });
});

describe('process starts carry the fields and headers the SDK sends', () => {
  // Fails before `stdin` was always sent: helpers left it out, which envd reads as "a pipe".
  it('every start says whether it wants stdin; only the server gets a pipe', {
    timeout: 60_000,
  }, async () => {
    const bridge = spawnBin(
      [
        'run',
        '--backend',
        'e2b',
        '--',
        'sh',
        '-c',
        'trap "" TERM; while :; do sleep 0.1; done # stdin-field',
      ],
      env(fake),
    );
    const box = () =>
      [...fake.sandboxes.values()].find((b) =>
        b.starts.some((s) => s.args.join(' ').includes('stdin-field')),
      );
    await waitFor(() => box() !== undefined, 30_000, 'the server start');
    bridge.child.stdin.end(); // the server ignores EOF and SIGTERM: the kill helpers run
    const result = await bridge.result;
    const starts = box()?.starts ?? [];
    const helpers = starts.filter((s) => s.args[0] === '--noprofile');
    // Control: the helper path really ran (the SIGTERM helper).
    expect(helpers.some((s) => s.args.join(' ').includes('kill -s TERM'))).toBe(true);
    for (const s of helpers)
      expect({ stdin: s.stdin, pipe: s.stdinPipe }).toEqual({ stdin: false, pipe: false });
    const server = starts.filter((s) => s.args.join(' ').includes('stdin-field'));
    expect(server.map((s) => ({ stdin: s.stdin, pipe: s.stdinPipe }))).toEqual([{ stdin: true, pipe: true }]);
    // envd ≥ 0.4.0 has a default user: no Authorization header, as the SDK does.
    expect(starts.every((s) => s.user === undefined)).toBe(true);
    expect(result.code).not.toBe(125);
  });

  // Fails before the user header: envd 0.3.9 refused the start, and the message blamed the token.
  it('a template with envd older than 0.4.0 gets the user named, and serves', {
    timeout: 60_000,
  }, async () => {
    const old = await startFakeE2B({ envdVersion: '0.3.9' });
    fakes.push(old);
    const bridge = spawnBin(['run', '--backend', 'e2b', '--', 'sh', '-c', 'read l; echo "$l"'], env(old));
    const message = line({ jsonrpc: '2.0', id: 1, method: 'ping' });
    bridge.child.stdin.write(message);
    await waitFor(() => bridge.stdoutSoFar().includes(10), 30_000, 'the echoed line');
    bridge.child.stdin.end();
    const result = await bridge.result;
    expect(result.stderr).not.toMatch(/access token/);
    // The server echoed the request: it ran, read its stdin and wrote its stdout.
    expect(result.stdout.toString().startsWith(message)).toBe(true);
    const starts = [...old.sandboxes.values()].flatMap((b) => b.starts);
    expect(starts.length).toBeGreaterThan(0);
    expect(starts.every((s) => s.user === 'user')).toBe(true);
  });
});

describe('a sandbox failure ends with 125', () => {
  // Fails before the fix: the request was answered, then the binary exited 137 (the server's SIGKILL).
  it('envd sends a frame over the cap: the request is answered and the binary exits 125', {
    timeout: 60_000,
  }, async () => {
    fake.attack({
      match: 'oversize-frame',
      frame: { kind: 'data', stream: 'stdout', bytes: 8 * 1024 * 1024 },
    });
    const bridge = spawnBin(
      ['run', '--backend', 'e2b', '--', 'sh', '-c', 'cat >/dev/null # oversize-frame'],
      env(fake),
    );
    // A one-shot client: its request, then EOF, before the sandbox is even up.
    bridge.child.stdin.end(line({ jsonrpc: '2.0', id: 7, method: 'ping' }));
    const result = await bridge.result;
    const answer = JSON.parse(result.stdout.toString()) as { id: number; error?: { message: string } };
    expect(answer.id).toBe(7);
    expect(answer.error?.message).toMatch(/sandbox failed/);
    // Control: the oversize frame is what ended it.
    expect(result.stderr).toMatch(/over the cap/);
    expect(result.code).toBe(125);
  });
});
