import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { installedFromRegistry } from '../src/config/install-origin.js';
import { selfLauncher } from '../src/config/launcher.js';

const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-origin-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const REGISTRY_ENTRY = {
  version: '1.2.3',
  resolved: 'https://registry.npmjs.org/mcp-sandbox/-/mcp-sandbox-1.2.3.tgz',
  integrity:
    'sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==',
};

let count = 0;
/** An install folder (`<base>/node_modules/mcp-sandbox/dist/bin.js`) with the given lockfiles. */
function install(files: { hidden?: unknown; lock?: unknown; version?: string }) {
  const base = join(root, `install-${count++}`);
  const pkg = join(base, 'node_modules', 'mcp-sandbox');
  mkdirSync(join(pkg, 'dist'), { recursive: true });
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: 'mcp-sandbox',
      version: files.version ?? '1.2.3',
      bin: { 'mcp-sandbox': 'dist/bin.js' },
    }),
  );
  writeFileSync(join(pkg, 'dist', 'bin.js'), '');
  const put = (path: string, value: unknown) =>
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  if (files.hidden !== undefined) put(join(base, 'node_modules', '.package-lock.json'), files.hidden);
  if (files.lock !== undefined) put(join(base, 'package-lock.json'), files.lock);
  return { base, script: join(pkg, 'dist', 'bin.js') };
}
const lockOf = (entry: unknown) => ({ lockfileVersion: 3, packages: { 'node_modules/mcp-sandbox': entry } });

describe('the launcher wrap writes for the running binary', () => {
  it('npx only for a package npm installed from a registry at that version (hidden or project lockfile)', () => {
    for (const files of [{ hidden: lockOf(REGISTRY_ENTRY) }, { lock: lockOf(REGISTRY_ENTRY) }]) {
      const { script } = install(files);
      expect(selfLauncher({ node: '/usr/bin/node', script }, '1.2.3').launcher).toEqual([
        'npx',
        '-y',
        'mcp-sandbox@1.2.3',
      ]);
    }
  });

  it.each([
    ['no lockfile', {}],
    [
      'a tarball installed by path',
      { hidden: lockOf({ ...REGISTRY_ENTRY, resolved: 'file:../tarballs/mcp-sandbox-1.2.3.tgz' }) },
    ],
    ['a link', { hidden: lockOf({ ...REGISTRY_ENTRY, link: true }) }],
    ['another version', { hidden: lockOf({ ...REGISTRY_ENTRY, version: '1.2.4' }) }],
    ['no integrity', { hidden: lockOf({ ...REGISTRY_ENTRY, integrity: undefined }) }],
    [
      'a git address',
      { hidden: lockOf({ ...REGISTRY_ENTRY, resolved: 'git+ssh://git@github.com/x/y.git#abc' }) },
    ],
    [
      'another package tarball',
      { hidden: lockOf({ ...REGISTRY_ENTRY, resolved: 'https://registry.npmjs.org/evil/-/evil-1.2.3.tgz' }) },
    ],
    ['not JSON', { hidden: '{"packages": ' }],
    ['packages not an object', { hidden: { packages: ['node_modules/mcp-sandbox'] } }],
    // The hidden lockfile decides when it records the package: a project lockfile cannot overrule it.
    [
      'a hidden lockfile that says path, a project one that says registry',
      {
        hidden: lockOf({ ...REGISTRY_ENTRY, resolved: 'file:../x.tgz' }),
        lock: lockOf(REGISTRY_ENTRY),
      },
    ],
  ])('its own path for %s', (_, files) => {
    const { script } = install(files);
    const chosen = selfLauncher({ node: '/usr/bin/node', script }, '1.2.3');
    expect(chosen.launcher).toEqual(['/usr/bin/node', script]);
    expect(chosen.note).toContain('was not installed from a registry');
  });

  it('a lockfile that is a link, a FIFO or a directory is not read (and never hangs)', () => {
    const linked = install({});
    const elsewhere = join(root, 'elsewhere.json');
    writeFileSync(elsewhere, JSON.stringify(lockOf(REGISTRY_ENTRY)));
    symlinkSync(elsewhere, join(linked.base, 'node_modules', '.package-lock.json'));
    expect(installedFromRegistry(linked.base, '1.2.3')).toBe(false);
    const fifo = install({});
    execFileSync('mkfifo', [join(fifo.base, 'node_modules', '.package-lock.json')]);
    expect(installedFromRegistry(fifo.base, '1.2.3')).toBe(false);
    const dir = install({});
    mkdirSync(join(dir.base, 'package-lock.json'));
    expect(installedFromRegistry(dir.base, '1.2.3')).toBe(false);
  });
});
