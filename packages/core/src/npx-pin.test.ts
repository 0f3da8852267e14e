import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultPinLockFile, parseRegistrySpec, pinNpxSpec, RegistryError, readPinLock } from './npx-pin.js';

const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-pin-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npx pins', () => {
  it('parses registry specs; paths, URLs and git are not pinned; a range is refused', () => {
    expect(parseRegistrySpec('pkg')).toEqual({ name: 'pkg', selector: { kind: 'tag', value: 'latest' } });
    expect(parseRegistrySpec('@s/p@1.2.3')).toEqual({
      name: '@s/p',
      selector: { kind: 'version', value: '1.2.3' },
    });
    expect(parseRegistrySpec('pkg@next')).toEqual({ name: 'pkg', selector: { kind: 'tag', value: 'next' } });
    for (const spec of [
      './dir',
      '/abs/dir',
      'file:x',
      'https://h/x.tgz',
      'git+https://h/r.git',
      'user/repo',
    ]) {
      expect(parseRegistrySpec(spec)).toBeUndefined();
    }
    expect(() => parseRegistrySpec('pkg@^1.2.0')).toThrow(/cannot be pinned; give an exact version/);
  });

  it('reads a missing lock as empty and fails closed on a damaged one', () => {
    expect(readPinLock(join(dir, 'none.json')).pins).toEqual([]);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ v: 1, pins: [{ name: 'x', version: '1.0.0; rm -rf /' }] }));
    expect(() => readPinLock(bad)).toThrow(/damaged/);
    writeFileSync(bad, '{"v":1,"pins":[');
    expect(() => readPinLock(bad)).toThrow(/damaged/);
  });

  it('keeps the lock per user: XDG_STATE_HOME, else ~/.local/state', () => {
    expect(defaultPinLockFile({ XDG_STATE_HOME: '/s' }, '/h')).toBe('/s/mcp-sandbox/npx-lock.json');
    expect(defaultPinLockFile({}, '/h')).toBe('/h/.local/state/mcp-sandbox/npx-lock.json');
  });

  it('starts a pinned package offline, but never on an answer that is not a packument', async () => {
    const lockFile = join(dir, 'lock.json');
    const integrity = `sha512-${'A'.repeat(86)}==`;
    // A registry that answers with something else than a packument.
    const server = createServer((_req, res) => res.writeHead(200).end('<html>not json</html>'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const garbage = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    writeFileSync(
      lockFile,
      JSON.stringify({
        v: 1,
        pins: [{ registry: garbage, spec: 'pkg', name: 'pkg', version: '1.0.0', integrity, pinnedAt: 'x' }],
      }),
    );
    await expect(pinNpxSpec('pkg', { registry: garbage, lockFile })).rejects.toBeInstanceOf(RegistryError);
    await new Promise((resolve) => server.close(resolve));
    // The same registry gone: the pinned version, with a warning.
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (m: string) => warnings.push(m) };
    expect(await pinNpxSpec('pkg', { registry: garbage, lockFile, logger })).toBe('pkg@1.0.0');
    expect(warnings.join('')).toContain('using the pinned pkg@1.0.0');
  });
});
