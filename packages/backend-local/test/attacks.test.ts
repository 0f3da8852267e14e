/**
 * A hostile MCP server's attempts, run from the attacker's side and driven by the real SDK Client. Every case runs the same payload
 * twice: under `local`, where it must fail, and under `none`, where it must succeed — so that a
 * case that cannot tell the difference fails instead of passing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sandbox, SandboxBackend, SandboxSpec } from '@mcpsandbox/core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBackend, createNoneBackend } from '../src/index.js';
import { SandboxProcessTransport } from './sdk-transport.js';

const HOSTILE = readFileSync(new URL('./fixtures/hostile.cjs', import.meta.url), 'utf8');
const IS_ROOT = process.getuid?.() === 0;
const MARKER = `planted-${randomUUID()}`;
const SECRET = `secret-${randomUUID()}`;
const SECRET_NAME = 'MCPSANDBOX_ATTACK_SECRET';
const BANNER = `host-service-${randomUUID()}`;

// The planted home sits next to this file rather than in /tmp, so that only the sandbox's
// hiding of the host user's home (not the hiding of /tmp) can keep it out of reach.
const plantedHome = mkdtempSync(join(import.meta.dirname, '.tmp-home-'));
const socketDir = mkdtempSync(join(tmpdir(), 'mcpsandbox-attack-sock-'));
const socketPath = join(socketDir, 'host.sock');
let tcpServer: Server;
let tcpPort: number;
let unixServer: Server;
let victim: ChildProcess;
const open: Sandbox[] = [];

beforeAll(async () => {
  // Readable by anyone: when the tests run as root the sandbox runs as nobody, and file
  // permissions alone must not be what keeps the planted secrets out of reach.
  chmodSync(plantedHome, 0o755);
  mkdirSync(join(plantedHome, '.ssh'), { mode: 0o755 });
  writeFileSync(join(plantedHome, '.ssh/id_rsa'), `-----BEGIN OPENSSH PRIVATE KEY-----\n${MARKER}\n`, {
    mode: 0o644,
  });
  mkdirSync(join(plantedHome, '.aws'), { mode: 0o755 });
  writeFileSync(join(plantedHome, '.aws/credentials'), `[default]\naws_secret_access_key = ${MARKER}\n`, {
    mode: 0o644,
  });
  const greet = (server: Server) => server.on('connection', (socket) => socket.end(BANNER));
  tcpServer = createServer();
  greet(tcpServer);
  await new Promise<void>((resolve) => tcpServer.listen(0, '127.0.0.1', resolve));
  tcpPort = (tcpServer.address() as { port: number }).port;
  unixServer = createServer();
  greet(unixServer);
  await new Promise<void>((resolve) => unixServer.listen(socketPath, resolve));
  // Let anyone connect, so that only the sandbox (not file permissions) stands in the way.
  chmodSync(socketDir, 0o755);
  chmodSync(socketPath, 0o777);
  // As root the sandbox runs as nobody: the victim does too, so that only the sandbox's pid
  // namespace, not a uid mismatch, keeps its environment out of reach.
  victim = spawn('sleep', ['120'], {
    env: { [SECRET_NAME]: SECRET, PATH: process.env.PATH ?? '' },
    stdio: 'ignore',
    ...(IS_ROOT ? { uid: 65534, gid: 65534 } : {}),
  });
});

afterAll(() => {
  victim?.kill('SIGKILL');
  tcpServer?.close();
  unixServer?.close();
  rmSync(plantedHome, { recursive: true, force: true });
  rmSync(socketDir, { recursive: true, force: true });
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((box) => box.close()));
});

const hostEnv = () => ({ ...process.env, HOME: plantedHome });
const backends: Record<'local' | 'none', () => SandboxBackend> = {
  local: () => createLocalBackend({ hostEnv: hostEnv() }),
  none: () => createNoneBackend({ hostEnv: hostEnv() }),
};

async function sandbox(which: 'local' | 'none', spec: Partial<SandboxSpec> = {}): Promise<Sandbox> {
  const box = await backends[which]().create({
    sessionId: `attack-${which}`,
    env: {},
    ttlMs: 60_000,
    ...spec,
  });
  open.push(box);
  return box;
}

/** Starts the hostile server in a fresh sandbox and has the real SDK Client call one attack. */
async function attempt(
  which: 'local' | 'none',
  attack: string,
  args: Record<string, unknown> = {},
  spec: Partial<SandboxSpec> = {},
): Promise<{ success: boolean; detail: string; box: Sandbox }> {
  const box = await sandbox(which, spec);
  const proc = await box.exec(['node', '-e', HOSTILE, 'serve']);
  const client = new Client({ name: 'attack-test', version: '0.0.0' }, { capabilities: {} });
  await client.connect(new SandboxProcessTransport(proc));
  try {
    const result = await client.callTool({ name: attack, arguments: args }, undefined, { timeout: 25_000 });
    const content = result.content as Array<{ type: string; text: string }>;
    return { ...(JSON.parse(content[0]!.text) as { success: boolean; detail: string }), box };
  } finally {
    await client.close();
  }
}

/** The attempt fails under `local` and succeeds under `none`. */
async function expectBlocked(
  attack: string,
  args: Record<string, unknown> = {},
  spec: Partial<SandboxSpec> = {},
) {
  const local = await attempt('local', attack, args, spec);
  expect(local.success, `${attack} under local: ${local.detail}`).toBe(false);
  const none = await attempt('none', attack, args, spec);
  expect(none.success, `${attack} under none (control): ${none.detail}`).toBe(true);
  return { local, none };
}

describe('hostile server under local', () => {
  it("cannot read the host user's ~/.ssh/id_rsa", async () => {
    await expectBlocked('read-ssh-key', { hostHome: plantedHome, marker: MARKER });
  });

  it("cannot read the host user's ~/.aws/credentials", async () => {
    await expectBlocked('read-aws-credentials', { hostHome: plantedHome, marker: MARKER });
  });

  it('cannot read /etc/shadow', async () => {
    const local = await attempt('local', 'read-shadow');
    expect(local.success, local.detail).toBe(false);
    // Only root can read it at all; as anyone else the control has nothing to show.
    const none = await attempt('none', 'read-shadow');
    expect(none.success, none.detail).toBe(IS_ROOT);
  });

  it('cannot list /root', async () => {
    const local = await attempt('local', 'list-root');
    expect(local.success, local.detail).toBe(false);
    const none = await attempt('none', 'list-root');
    expect(none.success, none.detail).toBe(IS_ROOT && readdirSync('/root').length > 0);
  });

  it("cannot read another process's /proc/<pid>/environ", async () => {
    await expectBlocked('read-proc-environ', { pid: victim.pid, secret: SECRET });
  });

  it("cannot read the bridge's (its ancestors') environment", async () => {
    await expectBlocked('read-parent-environ');
  });

  it('cannot find a secret variable that was not allowlisted', async () => {
    const { local } = await expectBlocked('find-secret-variable', { name: SECRET_NAME, secret: SECRET });
    expect(local.detail).toBe('not found');
  });

  it("cannot connect to a TCP service on the host's 127.0.0.1", async () => {
    await expectBlocked('connect-host-loopback', { port: tcpPort, banner: BANNER });
  });

  it('cannot connect to a host unix socket it cannot see', async () => {
    await expectBlocked('connect-host-unix-socket', { path: socketPath, banner: BANNER });
  });

  it('cannot connect to a host unix socket even when its directory is mounted (seccomp)', async () => {
    const mounts = [{ hostPath: socketDir, sandboxPath: socketDir, mode: 'ro' as const }];
    const { local } = await expectBlocked(
      'connect-host-unix-socket',
      { path: socketPath, banner: BANNER },
      { mounts },
    );
    // The socket is visible and connectable by permissions; only the filter refuses it.
    expect(local.detail).toBe('EPERM');
  });

  it('cannot reach a host the grants do not name, through the proxy', async () => {
    const granted = createServer((socket) => socket.end('granted'));
    await new Promise<void>((resolve) => granted.listen(0, '127.0.0.1', resolve));
    try {
      const grantedPort = (granted.address() as { port: number }).port;
      const { local } = await expectBlocked(
        'reach-ungranted-host',
        { port: tcpPort, banner: BANNER },
        { network: { allow: [`127.0.0.1:${grantedPort}`] } },
      );
      expect(local.detail).toMatch(/^HTTP\/1\.1 403/);
    } finally {
      granted.close();
    }
  });

  it('cannot write to any host path', async () => {
    const name = `pwned-${randomUUID()}`;
    const targets = [
      join(plantedHome, name),
      join(import.meta.dirname, name),
      join(tmpdir(), name),
      join('/etc', name),
      join('/usr/local', name),
    ];
    const written = () => targets.filter((file) => existsSync(file) && readFileSync(file, 'utf8') === MARKER);
    try {
      await attempt('local', 'write-host-paths', { paths: targets, marker: MARKER });
      expect(written()).toEqual([]);
      await attempt('none', 'write-host-paths', { paths: targets, marker: MARKER });
      expect(written().length).toBeGreaterThan(0);
    } finally {
      for (const file of targets) rmSync(file, { force: true });
    }
  });

  it('cannot create a nested user namespace', async () => {
    await expectBlocked('nested-user-namespace');
  });

  it('cannot leave a process running after close()', async () => {
    const survivors = (tag: string) =>
      readdirSync('/proc')
        .filter((entry) => /^\d+$/.test(entry))
        .filter((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(tag);
          } catch {
            return false;
          }
        })
        .map(Number);
    for (const which of ['local', 'none'] as const) {
      const tag = `1000.${Date.now()}${Math.floor(Math.random() * 1000)}`;
      const { box } = await attempt(which, 'outlive-session', { sleepArg: tag });
      await box.close();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const left = survivors(tag);
      for (const pid of left) process.kill(pid, 'SIGKILL');
      if (which === 'local') expect(left, 'processes left by the local sandbox').toEqual([]);
      else expect(left.length, 'control: none leaves the daemon behind').toBeGreaterThan(0);
    }
  });

  it('cannot exhaust processes with a fork loop (default process limit)', async () => {
    const count = 400;
    const { local } = await expectBlocked('fork-loop', { count });
    expect(local.detail).toMatch(/^started \d+ of 400/);
  });
});
