import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readPinLock, updatePinLock, updatePythonPins } from './pin-lock.js';

const dist = { name: 'mcp-server-time', version: '2026.10.19', hashes: [`sha256:${'a'.repeat(64)}`] };
const npmPin = {
  registry: 'https://registry.npmjs.org/',
  spec: 'pkg',
  name: 'pkg',
  version: '1.0.0',
  integrity: `sha512-${'A'.repeat(86)}==`,
  pinnedAt: '2026-01-01T00:00:00.000Z',
};

describe('uvx pins in the npm pin lock', () => {
  it('keeps both kinds: a change of one leaves the other as it was', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'mcp-sandbox-pins-')), 'lock.json');
    updatePinLock(file, () => [npmPin]);
    const pin = {
      index: 'https://pypi.org/simple',
      requirement: 'mcp-server-time',
      dists: [dist],
      pinnedAt: 'now',
    };
    updatePythonPins(file, (pins) => [...pins, pin]);
    updatePinLock(file, (pins) => pins);
    expect(readPinLock(file)).toEqual({ v: 2, pins: [npmPin], python: [pin] });
  });

  it('fails closed on a damaged uvx pin', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'mcp-sandbox-pins-')), 'lock.json');
    for (const bad of [
      { ...dist, name: '../x' },
      { ...dist, version: '1.0; rm -rf /' },
      { ...dist, hashes: ['md5:00'] },
      { ...dist, hashes: [] },
    ]) {
      const python = [{ index: 'x', requirement: 'x', dists: [bad], pinnedAt: 'now' }];
      writeFileSync(file, JSON.stringify({ v: 2, pins: [], python }));
      expect(() => readPinLock(file)).toThrow(/damaged/);
    }
  });
});
