import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PinChangedError } from '@mcpsandbox/core';
import { afterAll, describe, expect, it } from 'vitest';
import { closeDir, openOwnedDir } from '../host-fs.js';
import { checkInstalledIntegrity } from './installed-integrity.js';

const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-installed-integrity-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const integrity = (text: string) => `sha512-${createHash('sha512').update(text).digest('base64')}`;
const PINNED = integrity('genuine');
let n = 0;

/** An install prefix whose npm record is `lock` (a string as written, or a value as JSON). */
function check(lock: unknown, spec = '@s/pkg@1.0.0', write?: (modules: string) => void): string {
  const prefix = join(work, String(n++));
  const modules = join(prefix, 'node_modules');
  mkdirSync(modules, { recursive: true });
  if (write) write(modules);
  else
    writeFileSync(
      join(modules, '.package-lock.json'),
      typeof lock === 'string' ? lock : JSON.stringify(lock),
    );
  const dir = openOwnedDir(prefix);
  try {
    return checkInstalledIntegrity(dir, spec, PINNED);
  } finally {
    closeDir(dir);
  }
}

const record = (value: unknown) => ({
  packages: { 'node_modules/@s/pkg': { version: '1.0.0', integrity: value } },
});

describe("what npm installed, against the pin (the install's own record, read as hostile input)", () => {
  it('accepts the pinned integrity (control), also beside hashes of other algorithms', () => {
    expect(check(record(PINNED))).toBe(PINNED);
    expect(check(record(`sha1-${'A'.repeat(27)}= ${PINNED}`))).toBe(PINNED);
  });

  it('refuses another integrity, naming both', () => {
    const other = integrity('impostor');
    expect(() => check(record(other))).toThrow(PinChangedError);
    expect(() => check(record(other))).toThrow(`with integrity ${other}, but ${PINNED} is pinned`);
  });

  it('refuses a record that is missing, a symlink, a FIFO, not JSON, without the package, or not an integrity', () => {
    const cases: Array<[unknown, ((modules: string) => void)?]> = [
      [undefined, () => {}],
      [
        undefined,
        (modules) => symlinkSync(join(work, 'elsewhere.json'), join(modules, '.package-lock.json')),
      ],
      [undefined, (modules) => execFileSync('mkfifo', [join(modules, '.package-lock.json')])],
      ['{"packages":'],
      [{ packages: { 'node_modules/other': { integrity: PINNED } } }],
      [record(42)],
      [record(`${PINNED}\n$(reboot)`)],
      [record(`sha1-${'A'.repeat(27)}=`)],
      [[record(PINNED)]],
    ];
    for (const [lock, write] of cases) {
      expect(() => check(lock, '@s/pkg@1.0.0', write)).toThrow(/refusing to start it/);
    }
  });
});
