import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PinChangedError, pinNpxPackage, updatePins } from './npx-pin.js';
import { readPinLock, updatePinLock } from './pin-lock.js';

const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-pin-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
const lockPath = () => join(dir, `lock-${++n}.json`);
const integrity = (text: string) => `sha512-${createHash('sha512').update(text).digest('base64')}`;

/** A registry serving `pkg` at 1.0.0 with the integrity of `tarball`. */
async function registry(tarball: string): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        name: 'pkg',
        'dist-tags': { latest: '1.0.0' },
        versions: { '1.0.0': { dist: { integrity: integrity(tarball) } } },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

const close = (server: Server) => new Promise((resolve) => server.close(resolve));

describe('the pin lock', () => {
  it('reads a version 1 lock, and writes version 2 with its pins kept', () => {
    const file = lockPath();
    const pin = {
      registry: 'https://registry.npmjs.org/',
      spec: 'pkg',
      name: 'pkg',
      version: '1.0.0',
      integrity: integrity('a'),
      pinnedAt: '2026-01-01T00:00:00.000Z',
    };
    writeFileSync(file, JSON.stringify({ v: 1, pins: [pin] }));
    expect(readPinLock(file).pins).toEqual([pin]);
    updatePinLock(file, (pins) => pins);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ v: 2, pins: [pin] });
    writeFileSync(file, JSON.stringify({ v: 3, pins: [pin] }));
    expect(() => readPinLock(file)).toThrow(/damaged/);
  });

  it('a change that throws leaves the lock as it was and releases the mutex', () => {
    const file = lockPath();
    updatePinLock(file, () => []);
    expect(() =>
      updatePinLock(file, () => {
        throw new Error('refused');
      }),
    ).toThrow('refused');
    expect(existsSync(`${file}.lock`)).toBe(false);
    updatePinLock(file, (pins) => pins);
  });

  it('breaks a mutex whose owner died', () => {
    const file = lockPath();
    const dead = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    writeFileSync(`${file}.lock`, `${dead} 0123456789abcdef`);
    updatePinLock(file, () => []);
    expect(existsSync(`${file}.lock`)).toBe(false);
    expect(readPinLock(file).pins).toEqual([]);
  });

  it('keys pins by name@version: another registry serving it as another tarball is refused, naming both', async () => {
    const file = lockPath();
    const first = await registry('genuine');
    const second = await registry('impostor');
    const mirror = await registry('genuine');
    try {
      expect(await pinNpxPackage('pkg', { registry: first.url, lockFile: file })).toEqual({
        spec: 'pkg@1.0.0',
        integrity: integrity('genuine'),
      });
      const refused = pinNpxPackage('pkg@1.0.0', { registry: second.url, lockFile: file });
      await expect(refused).rejects.toBeInstanceOf(PinChangedError);
      await expect(refused).rejects.toThrow(
        `${second.url} (not ${first.url}, where it was pinned) serves a different tarball for pkg@1.0.0: ${integrity('impostor')}, pinned ${integrity('genuine')}`,
      );
      await expect(pinNpxPackage('pkg', { registry: second.url, lockFile: file })).rejects.toThrow(
        /--registry/,
      );
      // The same tarball from another registry (a mirror) is the same package.
      expect((await pinNpxPackage('pkg', { registry: mirror.url, lockFile: file })).integrity).toBe(
        integrity('genuine'),
      );
      expect(readPinLock(file).pins.map((pin) => pin.registry)).toEqual([first.url]);
      // `update --registry`: the user accepts the other registry's tarball, and the pin moves there.
      const [moved] = await updatePins('pkg', file, {}, second.url);
      expect(moved).toMatchObject({ registry: first.url, newRegistry: second.url });
      expect(readPinLock(file).pins).toEqual([
        expect.objectContaining({ registry: second.url, integrity: integrity('impostor') }),
      ]);
      expect((await pinNpxPackage('pkg@1.0.0', { registry: second.url, lockFile: file })).integrity).toBe(
        integrity('impostor'),
      );
    } finally {
      await Promise.all([close(first.server), close(second.server), close(mirror.server)]);
    }
  });
});
