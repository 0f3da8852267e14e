/** The promises checked through the backend's own API: one sandbox per attack, closed after it. */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Logger, SandboxSpec } from '@mcpsandbox/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANARY, IS_ROOT, LINUX, SuiteDirs, WITHHELD } from './fixture.js';
import type { PromiseSuiteOptions } from './options.js';
import { HOST_TREE, IDENTITY_PROBE, READ_PROBE, SETID_ATTACK } from './scripts.js';

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export interface Ran {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
}

/** Every entry below `dir` on the host, as the host sees it (links not followed). */
export function hostTree(dir: string): Array<{ path: string; mode: number; caps: boolean }> {
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', HOST_TREE, dir], { encoding: 'utf8' }));
}

/** The set-id attack's plants below `dir`: none keeps a set-id bit or a capability; the control is there. */
export function expectNoSetIdPlants(dir: string, said: string): void {
  const tree = hostTree(dir);
  const plain = tree.find((entry) => entry.path === join(dir, 'plain'));
  expect(plain, `the attack ran and wrote its control file (it said: ${said})`).toBeDefined();
  expect((plain?.mode ?? 0) & 0o777).toBe(0o755);
  const planted = tree
    .filter((entry) => (entry.mode & 0o6000) !== 0 || entry.caps)
    .map(
      (entry) =>
        `${entry.path} mode ${(entry.mode & 0o7777).toString(8)}${entry.caps ? ' with capabilities' : ''}`,
    );
  expect(planted, `set-id or capability plants on the host (the attack said: ${said})`).toEqual([]);
}

export function registerSessionCases(options: PromiseSuiteOptions): void {
  const timeout = options.timeoutMs ?? 60_000;
  const dirs = new SuiteDirs();
  let home = '';
  let upstream: Server;
  let port = 0;

  beforeAll(async () => {
    home = dirs.home();
    upstream = createServer((_req, res) => res.end('granted-upstream-ok'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = (upstream.address() as AddressInfo).port;
  });
  afterAll(() => {
    upstream.close();
    dirs.removeAll();
  });

  const run = async (
    command: readonly string[],
    spec: Partial<SandboxSpec> = {},
    settings: Record<string, string> = {},
  ): Promise<Ran> => {
    const hostEnv = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      [WITHHELD.name]: WITHHELD.value,
    };
    const backend = options.createBackend({ hostEnv, settings, logger: silent });
    const box = await backend.create({ sessionId: 'promises', env: {}, ttlMs: 60_000, ...spec });
    try {
      const proc = await box.exec(command);
      await proc.closeStdin();
      const read = async (stream: AsyncIterable<Uint8Array>) => {
        let text = '';
        for await (const chunk of stream) text += Buffer.from(chunk).toString();
        return text;
      };
      const [stdout, stderr, status] = await Promise.all([read(proc.stdout), read(proc.stderr), proc.exit]);
      return { stdout, stderr, code: status.code };
    } finally {
      // One session at a time: some engines have one proxy per process.
      await box.close();
    }
  };
  const node = (script: string, ...args: string[]) => [process.execPath, '-e', script, ...args];
  const json = (ran: Ran) => {
    try {
      return JSON.parse(ran.stdout) as Record<string, string>;
    } catch {
      throw new Error(`the probe printed no JSON (exit ${ran.code}): ${ran.stdout}\n${ran.stderr}`);
    }
  };

  describe(`OS promises: ${options.name}, one sandbox per attack`, () => {
    it('the home canary is unreadable; the same read of a granted home works (control)', {
      timeout,
    }, async () => {
      const paths = [join(home, 'secret.txt'), join(home, '.ssh', 'id_rsa')];
      const hidden = json(await run(node(READ_PROBE, ...paths)));
      for (const path of paths) expect(hidden[path], path).toMatch(/^refused:/);
      const granted = json(
        await run(node(READ_PROBE, ...paths), {
          mounts: [{ hostPath: home, sandboxPath: home, mode: 'ro' }],
        }),
      );
      expect(granted[paths[0] as string]).toBe(`read:${CANARY}`);
    });

    it.runIf(LINUX)('/etc/shadow is unreadable', { timeout }, async () => {
      expect(json(await run(node(READ_PROBE, '/etc/shadow')))['/etc/shadow']).toMatch(/^refused:/);
    });

    it.runIf(LINUX && IS_ROOT)(
      'a root-only file is unreadable even in a granted folder; its neighbour is read (control)',
      { timeout },
      async () => {
        const dir = dirs.open('promise-root-only-');
        writeFileSync(join(dir, 'root-only'), CANARY, { mode: 0o600 });
        writeFileSync(join(dir, 'readable'), 'readable', { mode: 0o644 });
        const said = json(
          await run(node(READ_PROBE, join(dir, 'root-only'), join(dir, 'readable')), {
            mounts: [{ hostPath: dir, sandboxPath: dir, mode: 'ro' }],
          }),
        );
        expect(said[join(dir, 'readable')]).toBe('read:readable');
        expect(said[join(dir, 'root-only')]).toMatch(/^refused:/);
      },
    );

    it.runIf(LINUX)(
      'the server is not uid 0, holds no capabilities and cannot gain any (no_new_privs)',
      {
        timeout,
      },
      async () => {
        const who = json(await run(node(IDENTITY_PROBE)));
        for (const field of ['uid', 'gid'] as const) {
          expect((who[field] ?? '').split(/\s+/), `${field} ${who[field]}`).not.toContain('0');
        }
        for (const field of ['capEff', 'capPrm', 'capInh', 'capAmb'] as const) {
          expect(who[field], `${field} of the server`).toMatch(/^0+$/);
        }
        expect(who.noNewPrivs).toBe('1');
      },
    );

    it.runIf(LINUX)('set-id bits and file capabilities are refused in an rw mount', { timeout }, async () => {
      const dir = dirs.open('promise-setid-', 0o777);
      const ran = await run(['/usr/bin/python3', '-c', SETID_ATTACK, dir], {
        mounts: [{ hostPath: dir, sandboxPath: dir, mode: 'rw' }],
      });
      expectNoSetIdPlants(dir, `${ran.stdout}${ran.stderr}`);
    });

    it.runIf(LINUX)(
      'set-id bits and file capabilities are refused in a state home',
      { timeout },
      async () => {
        const stateRoot = dirs.open('promise-state-', IS_ROOT ? 0o711 : 0o700);
        const ran = await run(
          ['/bin/sh', '-c', 'exec /usr/bin/python3 -c "$0" "$HOME"', SETID_ATTACK],
          {},
          { state: 'promises', stateRoot },
        );
        const found = hostTree(stateRoot).find((entry) => entry.path.endsWith('/plain'));
        expect(
          found,
          `the attack wrote its control file in the state home: ${ran.stdout}${ran.stderr}`,
        ).toBeDefined();
        expectNoSetIdPlants((found?.path ?? '').slice(0, -'/plain'.length), `${ran.stdout}${ran.stderr}`);
      },
    );

    it('writes reach the host only through rw mounts', { timeout }, async () => {
      const outside = dirs.open('promise-rw-', 0o777);
      const script = `const fs = require('fs');
        for (const dir of process.argv.slice(1)) {
          try { fs.writeFileSync(dir + '/w', 'x'); console.log('wrote:' + dir); } catch (e) { console.log('refused:' + dir); }
        }`;
      const refused = await run(node(script, outside, '/usr', '/etc'));
      for (const dir of [outside, '/usr', '/etc']) expect(existsSync(join(dir, 'w')), dir).toBe(false);
      const mounted = await run(node(script, outside), {
        mounts: [{ hostPath: outside, sandboxPath: outside, mode: 'rw' }],
      });
      expect(mounted.stdout, refused.stdout).toContain(`wrote:${outside}`);
      expect(existsSync(join(outside, 'w'))).toBe(true);
    });

    it('the environment is the allowlist: a withheld host variable does not cross', { timeout }, async () => {
      const ran = await run(node('console.log(JSON.stringify(process.env))'), { env: { ALLOWED: 'yes' } });
      const env = json(ran);
      expect(env.ALLOWED).toBe('yes');
      expect(JSON.stringify(env)).not.toContain(WITHHELD.value);
      expect(Object.keys(env)).not.toContain(WITHHELD.name);
    });

    it('egress only through grants: the granted host answers, another is refused', { timeout }, async () => {
      const ran = await run(curlBoth(`http://127.0.0.1:${port}/`, 'http://example.com/'), {
        network: { allow: [`127.0.0.1:${port}`] },
      });
      const [granted, refused] = ran.stdout.split('\n');
      expect(granted, ran.stderr).toBe('200');
      expect(refused).not.toBe('200');
    });

    it('address checks: a name granted by name that points at loopback is refused; no way around the proxy', {
      timeout,
    }, async () => {
      const byName = await run(curlBoth(`http://localhost:${port}/`, `http://127.0.0.1:${port}/`), {
        network: { allow: [`localhost:${port}`] },
      });
      expect(byName.stdout).not.toContain('200');
      const direct = await run(
        node(
          `require('net').connect(${port}, '127.0.0.1').on('connect', () => console.log('reached')).on('error', (e) => console.log('error:' + e.code))`,
        ),
      );
      expect(direct.stdout).not.toContain('reached');
    });
  });
}

/** curl through the proxy the sandbox is given, for loopback too (local sets NO_PROXY for it); one status line per URL. */
function curlBoth(first: string, second: string): string[] {
  return [
    '/bin/sh',
    '-c',
    'for url in "$0" "$1"; do env -u NO_PROXY -u no_proxy curl -s -o /dev/null -w "%{http_code}\\n" --max-time 20 "$url" || echo "error"; done',
    first,
    second,
  ];
}
