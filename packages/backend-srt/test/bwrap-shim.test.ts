import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SRT_LINUX_SHARED_TMP, writeBwrapShim } from '../src/bwrap-shim.js';

// The shim in front of a stand-in bwrap that prints its arguments one per line.
const dir = mkdtempSync(join(tmpdir(), 'srt-shim-test-'));
const fakeBwrap = join(dir, "fake bwrap's");
writeFileSync(fakeBwrap, '#!/bin/sh\nfor a do printf "%s\\n" "[$a]"; done\n', { mode: 0o755 });
const shim = writeBwrapShim(fakeBwrap);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(shim.dir, { recursive: true, force: true });
});
const run = (args: string[]) => execFileSync(shim.path, args, { encoding: 'utf8' }).trim().split('\n');

describe.runIf(process.platform === 'linux')('the bwrap shim', () => {
  const made = !existsSync(SRT_LINUX_SHARED_TMP);
  if (made) mkdirSync(SRT_LINUX_SHARED_TMP);
  afterAll(() => {
    if (made) rmSync(SRT_LINUX_SHARED_TMP, { recursive: true, force: true });
  });

  it("lays the read-only tmpfs last, before srt's `-- <shell> -c <command>`, whatever the words hold", () => {
    const srtArgs = [
      '--ro-bind',
      '/',
      '/',
      '--bind',
      '/tmp/claude',
      '/tmp/claude',
      '--setenv',
      'X',
      'a -- b $HOME "q"',
    ];
    const tail = ['--', '/bin/sh', '-c', "echo 'it''s' $1 -- -c"];
    expect(run([...srtArgs, ...tail])).toEqual(
      [...srtArgs, '--tmpfs', '/tmp/claude', '--remount-ro', '/tmp/claude', ...tail].map((a) => `[${a}]`),
    );
  });

  it('passes any other call on unchanged (srt asks bwrap for --help)', () => {
    expect(run(['--help'])).toEqual(['[--help]']);
    expect(run(['a', '--', 'b', 'c', 'd'])).toEqual(['[a]', '[--]', '[b]', '[c]', '[d]']);
  });

  it('is private to this user and not writable (0500 in a 0700 directory)', () => {
    expect(statSync(shim.path).mode & 0o777).toBe(0o500);
    expect(statSync(shim.dir).mode & 0o777).toBe(0o700);
  });
});

describe.runIf(process.platform === 'linux')('the bwrap shim that keeps the promises', () => {
  // A stand-in setpriv that prints its own options, then runs what follows `--`.
  const fakeSetpriv = join(dir, 'setpriv');
  writeFileSync(
    fakeSetpriv,
    '#!/bin/sh\nwhile [ "$1" != -- ]; do printf "%s\\n" "{$1}"; shift; done; shift; exec "$@"\n',
    { mode: 0o755 },
  );
  const strict = writeBwrapShim(fakeBwrap, {
    setpriv: fakeSetpriv,
    runAs: { uid: 65534, gid: 65534 },
    filterBytes: new Uint8Array([6, 0, 0, 0, 0, 0, 0xff, 0x7f]),
  });
  afterAll(() => rmSync(strict.dir, { recursive: true, force: true }));
  const runStrict = (args: string[]) =>
    execFileSync(strict.path, args, { encoding: 'utf8' }).trim().split('\n');

  it("drops srt's --cap-add, adds the seccomp layer before the command, and runs bwrap as the unprivileged user", () => {
    const out = runStrict([
      '--unshare-user',
      '--cap-drop',
      'ALL',
      '--cap-add',
      'CAP_SETFCAP',
      '--',
      '/bin/sh',
      '-c',
      'x',
    ]);
    expect(out.filter((line) => line.startsWith('{'))).toEqual([
      '{--reuid=65534}',
      '{--regid=65534}',
      '{--clear-groups}',
      '{--no-new-privs}',
      '{--inh-caps=-all}',
      '{--bounding-set=-all}',
    ]);
    const args = out.filter((line) => line.startsWith('['));
    expect(args).not.toContain('[--cap-add]');
    expect(args).not.toContain('[CAP_SETFCAP]');
    const seccomp = args.indexOf('[--seccomp]');
    expect(seccomp).toBeGreaterThan(args.indexOf('[ALL]'));
    expect(seccomp).toBeLessThan(args.indexOf('[--]'));
  });

  it('gives a call that starts no sandbox no filter, and still drops the user', () => {
    const out = runStrict(['--unshare-user', '--dev-bind', '/', '/', 'true']);
    expect(out).toContain('{--reuid=65534}');
    expect(out).not.toContain('[--seccomp]');
  });
});
