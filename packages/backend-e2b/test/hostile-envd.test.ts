import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeE2B, startFakeE2B } from '../src/testing/index.js';
import { runInChild } from './helpers.js';

// A compromised envd (root in the VM, or a template the attacker built) sends frames meant to
// crash or bloat the host. Each case runs the built backend in its own Node process and bounds
// that process's peak RSS (VmHWM); a plain session peaks well under it (the control below).
const BOUND_MIB = 256;
const MiB = 1024 * 1024;

let fake: FakeE2B;
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterAll(async () => {
  await fake.close();
});

describe('the process stream from envd is read with a cap per frame', () => {
  it('control: a plain session stays far under the bound', { timeout: 60_000 }, async () => {
    const report = await runInChild(fake, { argv: ['sh', '-c', 'head -c 50000000 /dev/zero'] });
    expect(report.status).toEqual({ code: 0, signal: null });
    expect(report.stdoutBytes).toBe(50_000_000);
    expect(report.peakMiB).toBeLessThan(BOUND_MIB);
  });

  // Fails before the capped envd reader: the SDK's Connect reader allocated the declared size.
  it('a frame header declaring 4 GiB fails the process at once, without allocating it', {
    timeout: 60_000,
  }, async () => {
    fake.attack({
      match: 'victim-4g',
      frame: { kind: 'declared-length', declared: 0xffffffff, send: 256 * MiB },
    });
    const report = await runInChild(fake, { argv: ['sh', '-c', 'sleep 30 # victim-4g'], waitMs: 10_000 });
    expect(report.status).toMatchObject({ code: null, signal: 'SIGKILL', error: 'E_E2B_PROTOCOL' });
    expect(report.peakMiB).toBeLessThan(BOUND_MIB);
  });

  // Fails before the capped envd reader: one 290 MB frame of a JSON array was a fatal V8 error.
  it('a 290 MB frame holding a JSON array does not crash the host', { timeout: 120_000 }, async () => {
    fake.attack({ match: 'victim-array', frame: { kind: 'json-array', bytes: 290 * 1000 * 1000 } });
    const report = await runInChild(fake, { argv: ['sh', '-c', 'sleep 30 # victim-array'], waitMs: 30_000 });
    expect(report.status).toMatchObject({ code: null, signal: 'SIGKILL', error: 'E_E2B_PROTOCOL' });
    expect(report.peakMiB).toBeLessThan(BOUND_MIB);
  });

  // Fails before the capped envd reader: one 300 MB data event went far past the 1 MiB queue bound.
  it('a 300 MB data event is refused, not buffered', { timeout: 120_000 }, async () => {
    fake.attack({
      match: 'victim-data',
      frame: { kind: 'data', stream: 'stdout', bytes: 300 * 1000 * 1000 },
    });
    const report = await runInChild(fake, { argv: ['sh', '-c', 'sleep 30 # victim-data'], waitMs: 30_000 });
    expect(report.status).toMatchObject({ code: null, signal: 'SIGKILL', error: 'E_E2B_PROTOCOL' });
    expect(report.stdoutBytes).toBe(0);
    expect(report.peakMiB).toBeLessThan(BOUND_MIB);
  });

  // Fails before unary bodies were capped: the SDK read a SendInput answer whole.
  it('a 300 MB answer to a stdin write is refused, not read whole', { timeout: 120_000 }, async () => {
    fake.attack({ match: 'victim-unary', unaryBodyBytes: 300 * 1000 * 1000 });
    const report = await runInChild(fake, {
      argv: ['sh', '-c', 'cat >/dev/null # victim-unary'],
      action: 'write',
      waitMs: 2_000,
    });
    expect(report.action).toBe('E_PROCESS_CLOSED');
    expect(report.peakMiB).toBeLessThan(BOUND_MIB);
  });
});

describe('helper commands run without a login profile, their output discarded', () => {
  // Fails before helpers ran as `bash --noprofile --norc`: the SIGTERM helper ran the planted
  // profile through `bash -l`, and its flood was kept in memory.
  it('a planted ~/.bash_profile neither runs with the SIGTERM helper nor bloats the host', {
    timeout: 120_000,
  }, async () => {
    const profile = [
      'echo "ran for: $BASH_EXECUTION_STRING" >> "$HOME/profile-log"',
      'case "$BASH_EXECUTION_STRING" in',
      '  *"kill -s TERM"*) head -c 300000000 /dev/zero | tr "\\0" x ;;',
      'esac',
    ].join('\n');
    const plant = [
      'sh',
      '-c',
      `printf '%s\\n' '${profile.replaceAll("'", `'\\''`)}' > "$HOME/.bash_profile"`,
    ];
    const report = await runInChild(fake, {
      setup: [plant],
      argv: ['sh', '-c', 'trap "exit 7" TERM; while :; do sleep 0.1; done # victim-term'],
      action: 'sigterm',
      after: [['cat', '/home/user/profile-log']],
    });
    expect(report.action).toBe('ok');
    expect(report.status).toEqual({ code: 7, signal: null });
    expect(report.peakMiB).toBeLessThan(BOUND_MIB);
    // Control: the planted profile is live: it ran for the login shells that start processes.
    expect(report.after).toContain('ran for: exec -- sh -c');
    expect(report.after).not.toContain('kill -s TERM');
  });
});
