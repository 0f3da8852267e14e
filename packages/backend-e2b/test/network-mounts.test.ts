import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

describe('mounts are copies, in only', () => {
  const secret = () => join(host, 'secret.txt');
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
