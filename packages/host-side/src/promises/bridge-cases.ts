/** The promises checked through the built binary: a killed bridge, the next start's sweep, an ordinary user. */
import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { IS_ROOT, LINUX, ORDINARY_USER, SuiteDirs } from './fixture.js';
import type { PromiseSuiteOptions } from './options.js';
import {
  type Bridge,
  descendantsOf,
  processesWith,
  type SeenProcess,
  startBridge,
  stillRunning,
  waitUntil,
} from './processes.js';
import { DAEMON_SERVER, IDENTITY_PROBE, SETID_ATTACK } from './scripts.js';
import { expectNoSetIdPlants } from './session-cases.js';

export function registerBridgeCases(options: PromiseSuiteOptions): void {
  const timeout = options.timeoutMs ?? 60_000;
  const dirs = new SuiteDirs();
  const started: Bridge[] = [];
  /** What ran below each killed bridge: a failed case's survivors are killed after it. */
  const seenBelow: SeenProcess[][] = [];
  afterEach(() => {
    for (const bridge of started.splice(0)) bridge.child.kill('SIGKILL');
    for (const survivor of stillRunning(seenBelow.splice(0).flat())) {
      try {
        process.kill(survivor.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  });
  afterAll(() => dirs.removeAll());

  /** A bridge whose temp dir (where sessions keep their host files) is a fresh one of its own. */
  const bridge = (args: readonly string[], tmp: string, asUser?: typeof ORDINARY_USER) => {
    const home = asUser ? dirs.ownedBy('promise-bridge-home-', asUser) : dirs.home();
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: tmp };
    const started_ = startBridge(options.cli.bin, ['--backend', options.cli.backend, ...args], env, asUser);
    started.push(started_);
    return started_;
  };

  /** Starts a server that leaves a daemon, kills the bridge with SIGKILL, returns what ran below it. */
  const killedSession = async (tmp: string) => {
    const marker = `promise-daemon-${randomUUID()}`;
    const run = bridge(['--', process.execPath, '-e', DAEMON_SERVER, marker], tmp);
    await waitUntil(() => run.stderr().includes('daemon started'), `the server to start: ${run.stderr()}`);
    await waitUntil(() => processesWith(marker).length >= 2, 'the server and its daemon (control)');
    const seen: SeenProcess[] = descendantsOf(run.child.pid as number);
    seenBelow.push(seen);
    const left = readdirSync(tmp);
    run.child.kill('SIGKILL');
    await run.exit;
    return { seen, left, marker };
  };

  // /proc and setpriv: Linux only (macOS has its own teardown gap, named in its backend's README).
  describe.runIf(LINUX)(`OS promises: ${options.name}, through the built binary`, () => {
    it('SIGKILL of the bridge leaves no process of the session', { timeout }, async () => {
      const tmp = dirs.open('promise-tmp-');
      const { seen, marker } = await killedSession(tmp);
      expect(seen.length, 'processes below the bridge (control)').toBeGreaterThan(1);
      await waitUntil(
        () => stillRunning(seen).length === 0 && processesWith(marker).length === 0,
        'the session to end',
        10_000,
      ).catch(() => {});
      const survivors = stillRunning(seen).map((p) => `${p.pid} ${p.name}`);
      expect(survivors, 'processes of the session left after the bridge was killed').toEqual([]);
      expect(processesWith(marker)).toEqual([]);
    });

    it("the next start sweeps what a killed bridge's session left on the host", { timeout }, async () => {
      const tmp = dirs.open('promise-tmp-');
      const { left } = await killedSession(tmp);
      expect(left.length, 'host files of the live session (control)').toBeGreaterThan(0);
      const next = bridge(['--', process.execPath, '-e', 'process.exit(0)'], tmp);
      const exit = await next.exit;
      expect(exit.code, next.stderr()).toBe(0);
      const kept = readdirSync(tmp).filter((name) => left.includes(name));
      expect(kept, `left in the temp dir after the next start (${readdirSync(tmp).join(', ')})`).toEqual([]);
    });

    it.runIf(IS_ROOT)(
      'run by root: the server is not uid 0, holds no capabilities, and plants no set-id file in an rw mount',
      { timeout },
      async () => {
        const dir = dirs.open('promise-setid-root-', 0o777);
        const tmp = dirs.open('promise-tmp-');
        const script = '"$0" -e "$1"; exec /usr/bin/python3 -c "$2" "$3"';
        const run = bridge(
          [
            '--mount',
            `${dir}:${dir}:rw`,
            '--',
            '/bin/sh',
            '-c',
            script,
            process.execPath,
            IDENTITY_PROBE,
            SETID_ATTACK,
            dir,
          ],
          tmp,
        );
        const exit = await run.exit;
        expect(exit.code, run.stderr()).toBe(0);
        const who = JSON.parse(run.stdout().split('\n')[0] ?? '') as Record<string, string>;
        expect((who.uid ?? '').split(/\s+/), `uid ${who.uid}`).not.toContain('0');
        expect(who.capEff, 'effective capabilities of the server').toMatch(/^0+$/);
        expect(who.capPrm, 'permitted capabilities of the server').toMatch(/^0+$/);
        expect(who.noNewPrivs).toBe('1');
        expectNoSetIdPlants(dir, run.stdout());
      },
    );

    it.runIf(IS_ROOT)(
      'run by an ordinary user: set-id bits and file capabilities are refused in an rw mount',
      { timeout },
      async () => {
        const dir = dirs.open('promise-setid-user-', 0o777);
        const tmp = dirs.ownedBy('promise-tmp-user-', ORDINARY_USER);
        const run = bridge(
          ['--mount', `${dir}:${dir}:rw`, '--', '/usr/bin/python3', '-c', SETID_ATTACK, dir],
          tmp,
          ORDINARY_USER,
        );
        const exit = await run.exit;
        expect(exit.code, run.stderr()).toBe(0);
        expectNoSetIdPlants(dir, run.stderr());
      },
    );
  });
}
