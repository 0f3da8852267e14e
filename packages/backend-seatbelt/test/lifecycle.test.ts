import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sandbox, SandboxProcess, SandboxSpec } from '@mcpsandbox/core';
import { type FdPathStrategy, useFdPathStrategy } from '@mcpsandbox/host-side';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSeatbeltBackend } from '../src/backend.js';
import { psTable } from '../src/engine/processes.js';
import { OWNER_FILE, SESSION_PREFIX } from '../src/engine/session-root.js';
import { profilePath } from '../src/profile/plan.js';
import { decide, parseProfile } from '../src/sbpl/evaluate.js';

// Linux has no sandbox-exec: these tests run the engine's lifecycle (spawn, environment,
// teardown, sweep, sessions side by side) with a stand-in that enforces nothing. What the
// profile enforces is checked by the goldens and decision tables, and by the kernel on macOS.
const STANDIN = new URL('fixtures/standin-sandbox-exec.sh', import.meta.url).pathname;

// macOS has no /proc/self/fd: the host side's no-follow walks (installs, --state, the session
// root) run here the way they run there.
let strategy: FdPathStrategy;
beforeAll(() => {
  strategy = useFdPathStrategy('portable');
});
afterAll(() => {
  useFdPathStrategy(strategy);
});

let stateDir: string;
const open: Sandbox[] = [];
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'seatbelt-life-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((sandbox) => sandbox.close()));
  rmSync(stateDir, { recursive: true, force: true });
});

async function session(spec: Partial<SandboxSpec> = {}) {
  const backend = createSeatbeltBackend({
    platform: 'darwin',
    sandboxExec: STANDIN,
    stateDir,
    hostEnv: { PATH: process.env.PATH, HOME: stateDir },
  });
  const sandbox = await backend.create({ sessionId: 'life', env: {}, ttlMs: 60_000, ...spec });
  open.push(sandbox);
  return sandbox;
}

async function text(stream: AsyncIterable<Uint8Array>): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += Buffer.from(chunk).toString('utf8');
  return out;
}

const alive = (pid: number) => psTable().some((row) => row.pid === pid);

async function untilGone(pids: readonly number[]): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (!pids.some(alive)) return true;
    await new Promise((done) => setTimeout(done, 100));
  }
  return false;
}

describe('the seatbelt engine’s lifecycle (stand-in sandbox-exec on Linux)', () => {
  it('runs the command under sandbox-exec -p <profile> -- with exactly the session’s environment', async () => {
    const sandbox = await session({ env: { API_KEY: 'k' } });
    const proc = await sandbox.exec([process.execPath, '-e', 'console.log(JSON.stringify(process.env))']);
    const env = JSON.parse(await text(proc.stdout)) as Record<string, string>;
    expect((await proc.exit).code).toBe(0);
    expect(Object.keys(env).sort()).toEqual(
      [
        'API_KEY',
        'HOME',
        'HTTPS_PROXY',
        'HTTP_PROXY',
        'LANG',
        'NODE_USE_ENV_PROXY',
        'PATH',
        'TMPDIR',
        'http_proxy',
        'https_proxy',
      ].sort(),
    );
    const profile = parseProfile(readFileSync(join(env.TMPDIR as string, '.standin-profile.sb'), 'utf8'));
    // The profile names paths as Seatbelt resolves them (/tmp is /private/tmp on macOS).
    const home = profilePath(env.HOME as string, 'home');
    expect(decide(profile, { op: 'file-write-create', path: `${home}/x` }).action).toBe('allow');
    expect(
      decide(profile, { op: 'file-read-data', path: profilePath(process.execPath, 'node') }).action,
    ).toBe('allow');
    expect(decide(profile, { op: 'file-read-data', path: join(stateDir, 'other') }).action).toBe('deny');
    // No grants: not even the proxy is reachable.
    expect(
      decide(profile, {
        op: 'network-outbound',
        remote: `localhost:${new URL(env.HTTP_PROXY as string).port}`,
      }).action,
    ).toBe('deny');
  });

  it('close() ends the process group and a descendant that left it', async () => {
    const sandbox = await session();
    const proc = await sandbox.exec([
      '/bin/sh',
      '-c',
      'setsid sleep 300 & echo $!; sleep 300 & echo $!; wait',
    ]);
    const pids = await firstLines(proc, 2);
    expect(pids.every(alive)).toBe(true);
    await sandbox.close();
    expect(await untilGone(pids)).toBe(true);
  });

  it('close() removes the session root out of a survivor’s reach: links it swaps in are not followed', async () => {
    // A process that left its group and lost its parent outlives close() (no pid namespace). It
    // swaps directories of its home for links to a host folder while the host removes the root.
    const outside = join(stateDir, 'host-folder');
    mkdirSync(outside);
    for (let i = 0; i < 40; i++) writeFileSync(join(outside, `f${i}`), 'host data');
    const racer = join(stateDir, 'racer.cjs');
    writeFileSync(
      racer,
      `const fs = require('fs'); const h = process.env.HOME; const out = ${JSON.stringify(outside)};
      console.log(process.pid);
      const end = Date.now() + 6000; let n = 0;
      while (Date.now() < end) {
        for (let d = 0; d < 8; d++) {
          const p = h + '/d' + d;
          try { fs.mkdirSync(p); for (let i = 0; i < 40; i++) fs.writeFileSync(p + '/f' + i, 'x'); } catch {}
          try { fs.renameSync(p, h + '/old' + n++); } catch {}
          try { fs.symlinkSync(out, p); } catch {}
          try { fs.unlinkSync(p); } catch {}
        }
      }`,
    );
    const sandbox = await session();
    const proc = await sandbox.exec([
      '/bin/sh',
      '-c',
      `(setsid ${process.execPath} ${racer} &); sleep 0.5; exit 0`,
    ]);
    const [pid] = await firstLines(proc, 1);
    await proc.exit;
    await new Promise((done) => setTimeout(done, 500));
    await sandbox.close();
    const left = readdirSync(outside).length;
    const roots = readdirSync(stateDir).filter((name) => name.startsWith(SESSION_PREFIX));
    process.kill(pid as number, 'SIGKILL');
    expect(left).toBe(40);
    expect(roots).toEqual([]);
  });

  it('a later start sweeps a session whose owner died: its processes and its directory', async () => {
    // A session root as a killed bridge leaves it: an owner that is gone, a group still running.
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((done) => dead.once('exit', done));
    const orphan = spawn('/bin/sh', ['-c', 'sleep 300'], { detached: true, stdio: 'ignore' });
    orphan.unref();
    const root = join(stateDir, `${SESSION_PREFIX}Left01`);
    mkdirSync(join(root, 'home'), { recursive: true, mode: 0o700 });
    const start = psTable().find((row) => row.pid === orphan.pid)?.start;
    writeFileSync(join(root, OWNER_FILE), `${dead.pid} ${orphan.pid}@${start}`);
    expect(alive(orphan.pid as number)).toBe(true);
    await session();
    expect(existsSync(root)).toBe(false);
    expect(await untilGone([orphan.pid as number])).toBe(true);
  });

  it('the sweep leaves a process that got a recorded group id again (its start time differs)', async () => {
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((done) => dead.once('exit', done));
    const stranger = spawn('/bin/sh', ['-c', 'sleep 300'], { detached: true, stdio: 'ignore' });
    stranger.unref();
    try {
      const start = psTable().find((row) => row.pid === stranger.pid)?.start as number;
      const root = join(stateDir, `${SESSION_PREFIX}Reused`);
      mkdirSync(root, { mode: 0o700 });
      writeFileSync(join(root, OWNER_FILE), `${dead.pid} ${stranger.pid}@${start - 3600}`);
      await session();
      expect(existsSync(root)).toBe(false);
      await new Promise((done) => setTimeout(done, 500));
      expect(alive(stranger.pid as number)).toBe(true);
    } finally {
      try {
        process.kill(-(stranger.pid as number), 'SIGKILL');
      } catch {
        // gone already
      }
    }
  });

  it('a session whose owner lives, or a forged owner file, is left alone', async () => {
    const root = join(stateDir, `${SESSION_PREFIX}Live01`);
    mkdirSync(root, { mode: 0o700 });
    writeFileSync(join(root, OWNER_FILE), `${process.pid} 1@0`);
    const forged = join(stateDir, `${SESSION_PREFIX}Forged`);
    mkdirSync(forged, { mode: 0o700 });
    writeFileSync(join(forged, OWNER_FILE), '999999999 -1 1');
    await session();
    expect(existsSync(root)).toBe(true);
    expect(existsSync(forged)).toBe(true);
  });

  it('two sessions run at once, each with its own proxy port (serve: a sandbox per session)', async () => {
    const [a, b] = await Promise.all([
      session({ network: { allow: ['example.com'] } }),
      session({ network: { allow: ['example.org'] } }),
    ]);
    const ports = await Promise.all(
      [a, b].map(async (sandbox) => {
        const proc = await sandbox.exec([process.execPath, '-e', 'console.log(process.env.HTTP_PROXY)']);
        return (await text(proc.stdout)).trim();
      }),
    );
    expect(ports[0]).not.toBe(ports[1]);
  });

  it('npx -y: installs through its own step (registry only) and runs the installed package read-only', async () => {
    const cacheRoot = join(stateDir, 'npm-cache');
    const backend = createSeatbeltBackend({
      platform: 'darwin',
      sandboxExec: STANDIN,
      stateDir,
      npmCacheDir: cacheRoot,
      hostEnv: { PATH: process.env.PATH, HOME: stateDir },
    });
    const sandbox = await backend.create({ sessionId: 'npx', env: {}, ttlMs: 120_000 });
    open.push(sandbox);
    const command = await sandbox.prepare?.(['npx', '-y', 'semver@7.6.3', '1.2.3'], { stderr: () => {} });
    expect(command?.[0]?.startsWith(cacheRoot)).toBe(true);
    const proc = await sandbox.exec(command as string[]);
    expect((await text(proc.stdout)).trim()).toBe('1.2.3');
    const profile = parseProfile(readFileSync(join(profileTmp(proc), '.standin-profile.sb'), 'utf8'));
    const installed = profilePath(command?.[0] as string, 'bin');
    expect(decide(profile, { op: 'file-read-data', path: installed }).action).toBe('allow');
    expect(decide(profile, { op: 'file-write-data', path: installed }).action).toBe('deny');
  }, 120_000);

  it('a start that fails gives the --state claim back', async () => {
    const settings = { state: 'notes', stateRoot: join(stateDir, 'states') };
    const hostEnv = { PATH: process.env.PATH, HOME: stateDir };
    const broken = createSeatbeltBackend({
      platform: 'darwin',
      sandboxExec: STANDIN,
      stateDir: join(stateDir, 'missing'),
      hostEnv,
      settings,
    });
    await expect(broken.create({ sessionId: 'a', env: {}, ttlMs: 60_000 })).rejects.toThrow();
    // The state's claim (which keeps `state rm` away while a session uses it) is gone again.
    const claims = readdirSync(join(stateDir, 'states', 'notes')).filter((name) => name !== 'home');
    expect(claims).toEqual([]);
  });

  it('a server that dies after a refusal is told so, with the refusal and the grant', async () => {
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} };
    const backend = createSeatbeltBackend({
      platform: 'darwin',
      sandboxExec: STANDIN,
      stateDir,
      hostEnv: { PATH: process.env.PATH, HOME: stateDir },
      logger,
      // The unified log as macOS prints it for this session's tag (recorded shape).
      denialSource: (reporter, tag) => {
        const event = {
          eventMessage: `Sandbox: node(4242) deny(1) file-read-data /Users/alice/data/in.csv\nmcp-sandbox:${tag}`,
        };
        reporter.push(`${JSON.stringify(event)}\n`);
        return { kill() {} };
      },
    });
    const sandbox = await backend.create({ sessionId: 'refused', env: {}, ttlMs: 60_000 });
    open.push(sandbox);
    const proc = await sandbox.exec([process.execPath, '-e', 'process.exit(1)']);
    expect((await proc.exit).code).toBe(1);
    for (let i = 0; i < 100 && !warnings.some((w) => w.includes('exited after')); i++)
      await new Promise((d) => setTimeout(d, 100));
    expect(warnings).toContain(
      'macOS sandbox refused file-read-data /Users/alice/data/in.csv (node, pid 4242); to allow it: --mount /Users/alice/data/in.csv:/Users/alice/data/in.csv:ro',
    );
    expect(warnings.find((w) => w.includes('exited after'))).toBe(
      'the server exited after 1 macOS sandbox refusal(s); the first: macOS sandbox refused file-read-data /Users/alice/data/in.csv (node, pid 4242); to allow it: --mount /Users/alice/data/in.csv:/Users/alice/data/in.csv:ro',
    );
  });

  it('refuses to start off macOS without a sandbox-exec', async () => {
    const backend = createSeatbeltBackend({ platform: 'linux', stateDir });
    await expect(backend.create({ sessionId: 'x', env: {}, ttlMs: 1000 })).rejects.toMatchObject({
      code: 'E_SEATBELT_UNAVAILABLE',
    });
  });
});

/** The session tmp, where the stand-in left the last profile (one session per test). */
function profileTmp(_proc: SandboxProcess): string {
  const root = readdirSync(stateDir).find((name) => name.startsWith(SESSION_PREFIX));
  return join(stateDir, root as string, 'tmp');
}

async function firstLines(proc: SandboxProcess, count: number): Promise<number[]> {
  let out = '';
  for await (const chunk of proc.stdout) {
    out += Buffer.from(chunk).toString('utf8');
    const lines = out.split('\n').filter(Boolean);
    if (lines.length >= count) return lines.slice(0, count).map(Number);
  }
  throw new Error(`only ${out}`);
}
