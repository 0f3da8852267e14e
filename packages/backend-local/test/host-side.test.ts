/**
 * Attacks on what the host does for the sandbox (issue: the host as the attacker's tool), each
 * run through the built `mcp-sandbox run` binary from the attacker's side: a hostile package
 * served by a registry on loopback, installed with `npx -y`, whose install script and server try
 * the attack; and a control that proves the attack code ran.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheKey } from '@mcpsandbox/host-side';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type AttackConfig,
  BIN,
  FIXTURES,
  HOSTILE_PACKAGE,
  type Running,
  runBin,
  SHARED_SERVER,
  startRegistry,
} from './cli.js';

if (!existsSync(BIN)) {
  throw new Error(
    `${BIN} is missing: these tests drive the built binary; build the workspace first (turbo run build)`,
  );
}

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-host-side-'));
// As root the sandbox runs as nobody, who must be able to pass through to the cache and state.
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const SERVER = SHARED_SERVER;
const MiB = 2 ** 20;

function freshDir(name: string): string {
  const dir = mkdtempSync(join(work, `${name}-`));
  chmodSync(dir, 0o755);
  return dir;
}

/** Every path below `dir` (no link followed) whose name is `name`. */
function findNamed(dir: string, name: string): string[] {
  const found: string[] = [];
  const visit = (current: string) => {
    let entries: string[];
    try {
      entries = readdirSync(current);
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = join(current, entry);
      if (entry === name) found.push(path);
      if (lstatSync(path).isDirectory()) visit(path);
    }
  };
  visit(dir);
  return found;
}

async function stop(running: Running): Promise<void> {
  await running.client.close().catch(() => {});
}

describe('host-side operations under local, attacked through mcp-sandbox run', () => {
  it('finding 1: the host never writes its install marker through a link the install script planted', {
    timeout: 180_000,
  }, async () => {
    // A file of the host user (the bridge's user) that the attack aims at: ~/.bashrc, in effect.
    const canary = join(freshDir('canary'), 'bashrc');
    const original = `# the host user's file ${randomUUID()}\n`;
    writeFileSync(canary, original, { mode: 0o644 });
    const cache = freshDir('cache');
    const config: AttackConfig = {
      canary,
      // The marker's name before the fix, and the names the host writes now (which live outside).
      markerNames: ['.mcp-sandbox-install.json', 'install.json', 'usage.json'],
      secretName: 'UNUSED_SECRET',
      mountedFile: '/nonexistent',
    };
    const registry = await startRegistry(config);
    try {
      const running = await runBin([
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
        '--',
        'npx',
        '-y',
        `${HOSTILE_PACKAGE}@1.0.0`,
      ]);
      try {
        const { tools } = await running.client.listTools();
        expect(tools.map((tool) => tool.name)).toContain('env');
      } finally {
        await stop(running);
      }
      // Fails before the fix: the host wrote its marker (JSON) through the link into the canary.
      expect(readFileSync(canary, 'utf8')).toBe(original);
      // Control: the install script ran, planted its links and told the registry so...
      expect(registry.beacons).toHaveLength(1);
      expect(registry.beacons[0]?.planted).toEqual(config.markerNames);
      // ...and the link is still in the installed tree, pointing at the canary, never followed.
      const planted = findNamed(cache, '.mcp-sandbox-install.json');
      expect(planted).toHaveLength(1);
      expect(readlinkSync(planted[0]!)).toBe(canary);
      // The installed tree is the host's now: no other user (nobody, as which the install ran
      // when the host is root) may change it, and no setuid bit survived.
      const uid = process.getuid?.() ?? 0;
      const loose: string[] = [];
      const check = (path: string) => {
        const stat = lstatSync(path);
        if (stat.isSymbolicLink()) return;
        if (stat.uid !== uid || (stat.mode & 0o6022) !== 0)
          loose.push(`${path} ${stat.uid} ${stat.mode.toString(8)}`);
        if (stat.isDirectory()) for (const entry of readdirSync(path)) check(join(path, entry));
      };
      check(cache);
      expect(loose).toEqual([]);
      // A warm start reads the entry again (the marker, the binary) and follows nothing either.
      const warm = await runBin([
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
        '--',
        'npx',
        '-y',
        `${HOSTILE_PACKAGE}@1.0.0`,
      ]);
      try {
        expect((await warm.client.listTools()).tools.length).toBeGreaterThan(0);
      } finally {
        await stop(warm);
      }
      expect(registry.beacons).toHaveLength(1);
      expect(readFileSync(canary, 'utf8')).toBe(original);
    } finally {
      await registry.close();
    }
  });

  it("finding 4: the install step gets none of the server's --env values and --mounts, only the registry", {
    timeout: 180_000,
  }, async () => {
    const secretName = 'MCPSANDBOX_SERVER_TOKEN';
    const secret = `token-${randomUUID()}`;
    const shared = freshDir('mounted');
    const mountedFile = join(shared, 'notes.txt');
    const mountedText = `granted to the server ${randomUUID()}`;
    writeFileSync(mountedFile, mountedText, { mode: 0o644 });
    const writableDir = freshDir('writable');
    // Writable by the sandbox's user also when the tests run as root (then it runs as nobody).
    chmodSync(writableDir, 0o777);
    const registry = await startRegistry({
      canary: join(work, 'no-canary'),
      markerNames: [],
      secretName,
      mountedFile,
      writableDir,
    });
    try {
      const running = await runBin(
        [
          '--env',
          secretName,
          '--mount',
          `${shared}:ro`,
          '--mount',
          `${writableDir}:rw`,
          '--backend-option',
          `npmRegistry=${registry.url}`,
          '--backend-option',
          `npmCacheDir=${freshDir('cache')}`,
          '--',
          'npx',
          '-y',
          `${HOSTILE_PACKAGE}@1.0.0`,
        ],
        { [secretName]: secret },
      );
      try {
        // Control: the grants are real, the server itself sees both...
        expect(await running.call('env', { name: secretName })).toEqual({ value: secret });
        expect(await running.call('read', { path: mountedFile })).toEqual({ text: mountedText });
        expect(await running.call('write', { path: join(writableDir, 'from-server'), text: 'x' })).toEqual({
          ok: true,
        });
      } finally {
        await stop(running);
      }
      // ...and the install script ran and reached the registry, its only way out.
      expect(registry.beacons).toHaveLength(1);
      const found = registry.beacons[0]!;
      // Fails before the fix: the install had the secret and the mount, and sent both.
      expect(found.secret).toBeNull();
      expect(found.mounted).toMatch(/^ERR /);
      expect(found.envNames).not.toContain(secretName);
      expect(found.wrote).toMatch(/^ERR /);
      expect(existsSync(join(writableDir, 'from-install'))).toBe(false);
      expect(JSON.stringify(found)).not.toContain(secret);
      expect(JSON.stringify(found)).not.toContain(mountedText);
    } finally {
      await registry.close();
    }
  });

  it('finding 5: /dev/shm, /dev and /tmp are capped in memory; a backend option changes each cap', {
    timeout: 60_000,
  }, async () => {
    const capped = await runBin([
      '--mount',
      `${FIXTURES}:ro`,
      '--backend-option',
      'shmSize=8M',
      '--backend-option',
      'tmpSize=16M',
      '--',
      'node',
      SERVER,
    ]);
    try {
      // Fails before the fix: all 64 MiB land in host shared memory (and /tmp on the host's disk).
      const shm = await capped.call('fill', { path: '/dev/shm/hog', bytes: 64 * MiB });
      expect(shm).toEqual({ written: 8 * MiB, error: 'ENOSPC' });
      const tmp = await capped.call('fill', { path: '/tmp/hog', bytes: 64 * MiB });
      expect(tmp).toEqual({ written: 16 * MiB, error: 'ENOSPC' });
      // bwrap's /dev is a tmpfs of its own: read-only, so it is no way around the cap.
      expect(await capped.call('fill', { path: '/dev/hog', bytes: MiB })).toMatchObject({ written: 0 });
      // Control: below the cap the same writes go through.
      expect(await capped.call('fill', { path: '/dev/shm/ok', bytes: 4 * MiB })).toEqual({
        written: 4 * MiB,
        error: null,
      });
    } finally {
      await stop(capped);
    }
    const defaults = await runBin(['--mount', `${FIXTURES}:ro`, '--', 'node', SERVER]);
    try {
      expect(await defaults.call('statfs', { path: '/dev/shm' })).toEqual({ bytes: 256 * MiB });
      expect(await defaults.call('statfs', { path: '/tmp' })).toEqual({ bytes: 512 * MiB });
    } finally {
      await stop(defaults);
    }
  });

  it('finding 5: nothing of /tmp reaches the host disk or outlives a killed bridge; its home is swept at the next start', {
    timeout: 60_000,
  }, async () => {
    const stateDir = freshDir('state');
    const name = `left-${randomUUID()}`;
    const running = await runBin([
      '--mount',
      `${FIXTURES}:ro`,
      '--backend-option',
      `stateDir=${stateDir}`,
      '--',
      'node',
      SERVER,
    ]);
    const home = (await running.call('env', { name: 'HOME' })).value as string;
    expect(await running.call('write', { path: `/tmp/${name}`, text: 'tmp' })).toEqual({ ok: true });
    expect(await running.call('write', { path: `${home}/${name}`, text: 'home' })).toEqual({ ok: true });
    // Control: the file is there for the session.
    expect(await running.call('read', { path: `/tmp/${name}` })).toEqual({ text: 'tmp' });
    // The bridge dies without any chance to clean up.
    const pid = running.transport.pid;
    expect(pid).toBeTypeOf('number');
    process.kill(pid!, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const left = findNamed(stateDir, name);
    // Fails before the fix: /tmp was a directory on the host's disk, left behind.
    expect(left.map((path) => readFileSync(path, 'utf8'))).toEqual(['home']);
    await running.client.close().catch(() => {});

    // The next start sweeps the dead session's home.
    const next = await runBin([
      '--mount',
      `${FIXTURES}:ro`,
      '--backend-option',
      `stateDir=${stateDir}`,
      '--',
      'node',
      SERVER,
    ]);
    try {
      expect(await next.call('read', { path: `/tmp/${name}` })).toEqual({ error: 'ENOENT' });
      expect(findNamed(stateDir, name)).toEqual([]);
    } finally {
      await stop(next);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it('refuses a read-write --mount over the install cache or the state directory', async () => {
    const parent = freshDir('parent');
    const cache = join(parent, 'cache');
    mkdirSync(cache);
    const refused = (mount: string, option: string) => {
      const result = spawnSync(
        process.execPath,
        [BIN, 'run', '--mount', mount, '--backend-option', option, '--', 'node', SERVER],
        { input: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n', encoding: 'utf8', timeout: 30_000 },
      );
      expect(result.status, result.stderr).toBe(2);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      return result.stderr;
    };
    expect(refused(`${parent}:rw`, `npmCacheDir=${cache}`)).toContain('the install cache');
    expect(refused(`${parent}:rw`, `stateDir=${parent}`)).toContain("the sandboxes' state directory");
    expect(existsSync(cache)).toBe(true);
  });

  it("refuses a read-write --mount of uvx's environments (beside npm's install cache)", () => {
    const parent = freshDir('parent');
    const uv = join(parent, 'uv');
    mkdirSync(uv);
    const result = spawnSync(
      process.execPath,
      [
        BIN,
        'run',
        '--mount',
        `${uv}:rw`,
        '--backend-option',
        `npmCacheDir=${join(parent, 'npx')}`,
        '--',
        'node',
        SERVER,
      ],
      { input: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n', encoding: 'utf8', timeout: 30_000 },
    );
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain('the install cache');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('a script an earlier session rewrote in a rw mount cannot choose which hidden host directory is bound', {
    timeout: 60_000,
  }, async () => {
    // The user's home (hidden from every sandbox) holds a tool and, next to it, a secret.
    const home = mkdtempSync(join(import.meta.dirname, '.tmp-home-'));
    const project = freshDir('project');
    try {
      chmodSync(home, 0o755);
      // Writable by the sandbox's user also when the tests run as root (then it runs as nobody).
      chmodSync(project, 0o777);
      const tools = join(home, 'tools', 'bin');
      mkdirSync(tools, { recursive: true, mode: 0o755 });
      const secret = `secret-${randomUUID()}`;
      writeFileSync(join(tools, 'secret.txt'), secret, { mode: 0o644 });
      writeFileSync(join(tools, 'runner'), '#!/bin/sh\nexec /bin/sh "$@"\n', { mode: 0o755 });
      const env = { HOME: home };
      // Session 1: the server, granted the project read-write, rewrites a script in it so that
      // its #! line names the tool in the hidden home.
      const first = await runBin(
        ['--mount', `${project}:rw`, '--mount', `${FIXTURES}:ro`, '--', 'node', SERVER],
        env,
      );
      try {
        const script = `#!${join(tools, 'runner')}\ncat ${join(tools, 'secret.txt')} >&2\nexec node ${SERVER}\n`;
        expect(await first.call('write', { path: join(project, 'start.sh'), text: script })).toEqual({
          ok: true,
        });
      } finally {
        await stop(first);
      }
      chmodSync(join(project, 'start.sh'), 0o755);
      // Session 2: the user starts that script. The host must not bind tools/ for it.
      const args = ['run', '--mount', `${project}:rw`, '--mount', `${FIXTURES}:ro`];
      const start = (backend: string) =>
        spawnSync(process.execPath, [BIN, ...args, '--backend', backend, '--', join(project, 'start.sh')], {
          input: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n',
          encoding: 'utf8',
          timeout: 30_000,
          env: { PATH: process.env.PATH ?? '', ...env },
        });
      // Fails before the fix: the host read the #! line and bound the hidden tools/ directory.
      const local = start('local');
      expect(local.stderr).not.toContain(secret);
      // Control: the script does what the attacker wrote when nothing stands in the way.
      const none = start('none');
      expect(none.stderr).toContain(secret);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('an install killed mid-way leaves no staging directory behind after the next install', {
    timeout: 120_000,
  }, async () => {
    const cache = freshDir('cache');
    // What a bridge killed during an install leaves: a staging directory and its dead owner.
    const dead = join(cache, `${'0'.repeat(24)}.tmp-dead`);
    mkdirSync(join(dead, 'pkg', 'node_modules'), { recursive: true });
    writeFileSync(join(dead, 'owner-pid'), '999999999');
    // One whose owner still runs is left alone.
    const live = join(cache, `${'1'.repeat(24)}.tmp-live`);
    mkdirSync(live);
    writeFileSync(join(live, 'owner-pid'), String(process.pid));
    const registry = await startRegistry({
      canary: join(work, 'no-canary'),
      markerNames: [],
      secretName: 'UNUSED',
      mountedFile: '/nonexistent',
    });
    try {
      const running = await runBin([
        '--backend-option',
        `npmRegistry=${registry.url}`,
        '--backend-option',
        `npmCacheDir=${cache}`,
        '--',
        'npx',
        '-y',
        `${HOSTILE_PACKAGE}@1.0.0`,
      ]);
      await stop(running);
      expect(existsSync(dead)).toBe(false);
      expect(existsSync(live)).toBe(true);
      // The new entry holds the marker and its usage beside the install, and no owner file.
      const entries = readdirSync(cache).filter((name) => /^[0-9a-f]{24}$/.test(name));
      expect(entries).toHaveLength(1);
      expect(readdirSync(join(cache, entries[0]!)).sort()).toEqual(['install.json', 'pkg', 'usage.json']);
    } finally {
      await registry.close();
    }
  });

  it('a damaged cache entry is reported, not removed or used', { timeout: 60_000 }, async () => {
    const cache = freshDir('cache');
    const registry = await startRegistry({
      canary: join(work, 'no-canary'),
      markerNames: [],
      secretName: 'UNUSED',
      mountedFile: '/nonexistent',
    });
    try {
      const spec = `${HOSTILE_PACKAGE}@1.0.0`;
      const entry = join(cache, cacheKey(registry.url, spec));
      mkdirSync(join(entry, 'pkg'), { recursive: true });
      writeFileSync(join(entry, 'install.json'), '{"bin":"../../../bin/sh"}');
      // Not spawnSync: the registry answers from this process, and the start asks it first (pinning).
      const result = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          [
            BIN,
            'run',
            '--backend-option',
            `npmRegistry=${registry.url}`,
            '--backend-option',
            `npmCacheDir=${cache}`,
            '--',
            'npx',
            '-y',
            spec,
          ],
          { timeout: 30_000 },
        );
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        child.stdin.end('{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n');
        child.on('close', (status) => resolve({ status, stderr }));
      });
      expect(result.status).not.toBe(0);
      expect(result.stderr).toContain(`the install cache entry ${entry} is damaged`);
      expect(existsSync(join(entry, 'install.json'))).toBe(true);
      expect(registry.beacons).toEqual([]);
    } finally {
      await registry.close();
    }
  });
});
