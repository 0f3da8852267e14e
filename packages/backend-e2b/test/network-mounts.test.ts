import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendUnavailableError, type Sandbox, UsageError } from '@mcpsandbox/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { E2B_ERROR_CODES } from '../src/index.js';
import { type FakeE2B, startFakeE2B } from '../src/testing/index.js';
import { collect, fakeBackend } from './helpers.js';

let fake: FakeE2B;
let host: string;
const open: Sandbox[] = [];
beforeAll(async () => {
  fake = await startFakeE2B();
  host = mkdtempSync(join(tmpdir(), 'e2b-mounts-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((box) => box.close()));
});
afterAll(async () => {
  await fake.close();
  rmSync(host, { recursive: true, force: true });
});

const creates = () => fake.requests.filter((r) => r === 'POST /v2/sandboxes').length;

async function create(extra: object = {}, options: Parameters<typeof fakeBackend>[1] = {}) {
  const box = await fakeBackend(fake, options).create({ sessionId: 'net', env: {}, ttlMs: 60_000, ...extra });
  open.push(box);
  return { box, vm: fake.sandboxes.get(box.id)! };
}

async function run(box: Sandbox, argv: string[]): Promise<{ out: string; code: number | null }> {
  const proc = await box.exec(argv);
  const out = collect(proc.stdout);
  const status = await proc.exit;
  return { out: (await out).toString(), code: status.code };
}

describe('egress', () => {
  it('grants nothing by default: the VM is created with internet access off', async () => {
    const { vm } = await create();
    expect(vm.create.allow_internet_access).toBe(false);
    expect(vm.create.network).toBeUndefined();
  });

  it('maps hosts, wildcards and CIDRs to allowOut with everything else denied', async () => {
    const { vm } = await create({
      network: { allow: ['Example.com', '*.npmjs.org', '10.0.0.0/8', '1.1.1.1'] },
    });
    expect(vm.create.network).toEqual({
      allowOut: ['example.com', '*.npmjs.org', '10.0.0.0/8', '1.1.1.1'],
      denyOut: ['0.0.0.0/0'],
    });
    expect(vm.create.allow_internet_access).toBeUndefined();
  });

  it("control: only '*' leaves E2B's default (open) egress", async () => {
    const { vm } = await create({ network: { allow: ['*'] } });
    expect(vm.create.network).toBeUndefined();
    expect(vm.create.allow_internet_access).toBeUndefined();
  });

  it.each([['api.example.com:443'], ['[::1]:80'], ['bad host']])(
    'refuses %s, which E2B cannot express, before creating anything',
    async (rule) => {
      const before = creates();
      const error = await create({ network: { allow: ['example.com', rule] } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect(error).toMatchObject({ code: E2B_ERROR_CODES.networkUnsupported });
      expect((error as Error).message).toContain(rule);
      expect(creates()).toBe(before);
    },
  );

  it('a per-process grant widens the VM rules while only that process runs, then restores them', async () => {
    const { box, vm } = await create();
    const proc = await box.exec(['true'], { network: { allow: ['registry.npmjs.org'] } });
    expect(vm.networkUpdates).toEqual([{ allowOut: ['registry.npmjs.org'], denyOut: ['0.0.0.0/0'] }]);
    await proc.exit;
    await expect.poll(() => vm.networkUpdates.length).toBe(2);
    expect(vm.networkUpdates[1]).toEqual({ allow_internet_access: false });
  });

  it('refuses a per-process grant while another process runs (it would reach that one too)', async () => {
    const { box, vm } = await create();
    const server = await box.exec(['sleep', '30']);
    const error = await box.exec(['true'], { network: { allow: ['example.com'] } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect(vm.networkUpdates).toEqual([]);
    await server.kill('SIGKILL');
  });
});

const secret = () => join(host, 'secret.txt');

describe('mounts are copies, in only', () => {
  const data = () => join(host, 'data');

  beforeAll(() => {
    writeFileSync(secret(), 'TOP-SECRET-OUTSIDE-THE-GRANT');
    mkdirSync(join(data(), 'sub'), { recursive: true });
    writeFileSync(join(data(), 'a.txt'), 'hello from the host\n');
    writeFileSync(join(data(), 'sub', 'b.bin'), Buffer.from([0, 255, 128, 10, 13]));
    writeFileSync(join(data(), 'run.sh'), '#!/bin/sh\necho ran\n');
    chmodSync(join(data(), 'run.sh'), 0o755);
    symlinkSync(secret(), join(data(), 'link-to-secret'));
  });

  it('copies files and exec bits, never follows a symlink out of the grant, and copies nothing back', async () => {
    // Control: on the host, the link does lead to the secret, so following it would leak it.
    expect(readFileSync(join(data(), 'link-to-secret'), 'utf8')).toContain('TOP-SECRET');
    const { box, vm } = await create({
      mounts: [{ hostPath: data(), sandboxPath: '/home/user/data', mode: 'ro' }],
    });
    expect(await run(box, ['cat', 'data/a.txt'])).toEqual({ out: 'hello from the host\n', code: 0 });
    expect(await run(box, ['sh', '-c', 'test -x data/run.sh && ./data/run.sh'])).toEqual({
      out: 'ran\n',
      code: 0,
    });
    expect(await readFile(join(vm.home, 'data', 'sub', 'b.bin'))).toEqual(Buffer.from([0, 255, 128, 10, 13]));
    expect(await run(box, ['ls', 'data'])).toEqual({ out: 'a.txt\nrun.sh\nsub\n', code: 0 });
    const everything = await readdir(vm.root, { recursive: true });
    for (const file of everything) {
      const text = await readFile(join(vm.root, file)).catch(() => Buffer.alloc(0));
      expect(text.toString()).not.toContain('TOP-SECRET');
    }
    expect(await run(box, ['sh', '-c', 'echo changed-in-vm > data/a.txt'])).toMatchObject({ code: 0 });
    await box.close();
    expect(readFileSync(join(data(), 'a.txt'), 'utf8')).toBe('hello from the host\n');
  });

  it('checks the size cap before any sandbox is created', async () => {
    const before = creates();
    const error = await create(
      { mounts: [{ hostPath: data(), sandboxPath: '/home/user/data', mode: 'ro' }] },
      { maxMountBytes: 10 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(/more than 10 bytes/);
    expect(creates()).toBe(before);
  });

  it('checks the file-count cap (also as a string setting) before any sandbox is created', async () => {
    const before = creates();
    const error = await create(
      { mounts: [{ hostPath: data(), sandboxPath: '/home/user/data', mode: 'ro' }] },
      { settings: { maxMountFiles: '2' } },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toMatch(/more than 2 files/);
    expect(creates()).toBe(before);
  });

  it('rejects a relative mount target', async () => {
    const error = await create({ mounts: [{ hostPath: data(), sandboxPath: 'data', mode: 'ro' }] }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UsageError);
  });
});

describe('a per-process network grant is the only thing running', () => {
  // Fails before exec checked for a grant in force: the second process started under the wider rules.
  it('nothing else starts while a process runs with its own grant', async () => {
    const { box, vm } = await create();
    const granted = await box.exec(['sleep', '1'], { network: { allow: ['registry.npmjs.org'] } });
    const error = await box.exec(['sh', '-c', 'echo under-the-grant']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect(vm.starts.filter((s) => s.args.join(' ').includes('under-the-grant'))).toEqual([]);
    await granted.exit;
    // Control: once the grant is gone (restored), the same exec runs, under the session's rules.
    await expect.poll(() => vm.networkUpdates.length).toBe(2);
    expect(await run(box, ['sh', '-c', 'echo under-the-grant'])).toEqual({
      out: 'under-the-grant\n',
      code: 0,
    });
    expect(vm.starts.at(-1)?.network).toEqual({ allow_internet_access: false });
  });

  it('two execs in the same tick cannot both pass the check', async () => {
    const { box, vm } = await create();
    const results = await Promise.allSettled([
      box.exec(['sleep', '1'], { network: { allow: ['registry.npmjs.org'] } }),
      box.exec(['sh', '-c', 'echo same-tick']),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    for (const start of vm.starts) {
      if (start.args.join(' ').includes('same-tick')) {
        expect(start.network).toEqual({ allow_internet_access: false });
      }
    }
    for (const r of results) if (r.status === 'fulfilled') await r.value.exit;
  });
});

describe('mount files that change after planning', () => {
  /** A fresh mount directory with one file; `swap` runs when the VM is created, after planning. */
  async function planThenSwap(swap: (file: string) => void, options: Parameters<typeof fakeBackend>[1] = {}) {
    const dir = mkdtempSync(join(host, 'swap-'));
    const file = join(dir, 'a.txt');
    writeFileSync(file, 'planned content\n');
    fake.onCreate(() => swap(file));
    try {
      const { box, vm } = await create(
        { mounts: [{ hostPath: dir, sandboxPath: '/home/user/data', mode: 'ro' }] },
        options,
      );
      const result = await Promise.race([
        box.exec(['true']).then(
          (proc) => proc.exit.then(() => 'ran'),
          (error: unknown) => error,
        ),
        new Promise((resolve) => setTimeout(() => resolve('hung'), 5_000)),
      ]).catch((error: unknown) => error);
      return { result, vm };
    } catch (error) {
      // Before the fix, the copy (and so the failure) happened inside create().
      return { result: error, vm: [...fake.sandboxes.values()].at(-1)! };
    } finally {
      fake.onCreate(undefined);
    }
  }

  function copied(vm: { root: string }): string {
    try {
      return readFileSync(join(vm.root, 'home', 'user', 'data', 'a.txt'), 'utf8');
    } catch {
      return '';
    }
  }

  // Fails before uploads were opened with O_NOFOLLOW and fstat-checked: the secret was copied.
  it('a file swapped for a symlink is not followed: nothing is copied and the session fails', async () => {
    const { result, vm } = await planThenSwap((file) => {
      rmSync(file);
      symlinkSync(secret(), file);
    });
    expect(result).toMatchObject({ code: E2B_ERROR_CODES.mountChanged });
    expect(copied(vm)).not.toContain('TOP-SECRET');
  });

  // Fails before exactly the planned size was read: the grown file went past maxMountBytes.
  it('a file that grew past the cap is not copied', async () => {
    const { result, vm } = await planThenSwap((file) => writeFileSync(file, 'x'.repeat(100_000)), {
      maxMountBytes: 1_000,
    });
    expect(result).toMatchObject({ code: E2B_ERROR_CODES.mountChanged });
    expect(copied(vm).length).toBeLessThanOrEqual(1_000);
  });

  // Fails before uploads were opened non-blocking: a FIFO blocked the copy for ever.
  it('a file swapped for a FIFO fails at once instead of hanging', async () => {
    let fifo = '';
    const { result } = await planThenSwap((file) => {
      rmSync(file);
      execFileSync('mkfifo', [file]);
      fifo = file;
    });
    try {
      expect(result).not.toBe('hung');
      expect(result).toMatchObject({ code: E2B_ERROR_CODES.mountChanged });
    } finally {
      // Release a reader still blocked on the FIFO (only the unfixed code has one).
      try {
        closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {}
    }
  });
});

describe('mount caps', () => {
  // Fails before the caps went back to 2,000 entries and 50 MB, directories counted.
  it('by default refuses more than 2,000 files and directories, and more than 50 MB', async () => {
    const tree = mkdtempSync(join(host, 'tree-'));
    for (let d = 0; d < 100; d++) {
      mkdirSync(join(tree, `d${d}`));
      for (let f = 0; f < 19; f++) writeFileSync(join(tree, `d${d}`, `f${f}`), '');
    }
    // 1,900 files and 101 directories: under 2,000 files, over 2,000 entries.
    const before = creates();
    const many = await create({
      mounts: [{ hostPath: tree, sandboxPath: '/home/user/t', mode: 'ro' }],
    }).catch((e: unknown) => e);
    expect(many).toBeInstanceOf(UsageError);
    expect((many as Error).message).toMatch(/more than 2000 files and directories/);

    const big = mkdtempSync(join(host, 'big-'));
    execFileSync('truncate', ['-s', String(60 * 1000 * 1000), join(big, 'sparse.bin')]);
    const large = await create({
      mounts: [{ hostPath: big, sandboxPath: '/home/user/b', mode: 'ro' }],
    }).catch((e: unknown) => e);
    expect(large).toBeInstanceOf(UsageError);
    expect((large as Error).message).toMatch(/more than 52428800 bytes/);
    expect(creates()).toBe(before);
  });

  // Fails before chmod was batched: 2,500 long paths overflowed one command line.
  it('2,500 executable files all keep their executable bit', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(host, 'exec-'));
    const prefix = 'x'.repeat(60);
    for (let i = 0; i < 2_500; i++) {
      const file = join(dir, `${prefix}${i}.sh`);
      writeFileSync(file, '#!/bin/sh\n');
      chmodSync(file, 0o755);
    }
    const { box } = await create(
      { mounts: [{ hostPath: dir, sandboxPath: '/home/user/bin', mode: 'ro' }] },
      { maxMountFiles: 3_000 },
    );
    expect(await run(box, ['sh', '-c', 'find bin -type f -perm -u+x | wc -l'])).toEqual({
      out: '2500\n',
      code: 0,
    });
  });
});
