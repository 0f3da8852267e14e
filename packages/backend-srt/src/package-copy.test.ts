import { spawn } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adaptChildProcess } from '@mcpsandbox/core';
import { afterAll, describe, expect, it } from 'vitest';
import { type CopyStep, packageCopy } from './package-copy.js';

// The copy script itself, run here without a sandbox (the e2e tests run it in srt's): the
// layout it makes of an install tree, whatever names the tree holds.
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'srt-farm-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const plain: CopyStep = async (argv) => {
  const [command, ...args] = argv as [string, ...string[]];
  return adaptChildProcess(spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: {} }));
};

function install(name: string): string {
  const prefix = mkdtempSync(join(dir, 'install-'));
  const modules = join(prefix, 'node_modules');
  mkdirSync(join(modules, '.bin'), { recursive: true });
  for (const pkg of [name, 'dep', '@scope/dep', 'odd\nname with spaces']) {
    mkdirSync(join(modules, pkg), { recursive: true });
    writeFileSync(join(modules, pkg, 'index.js'), pkg);
  }
  writeFileSync(join(modules, '.package-lock.json'), '{}');
  symlinkSync(`../${name}/index.js`, join(modules, '.bin', 'run'));
  symlinkSync('/etc', join(modules, 'evil'));
  symlinkSync('/etc', join(modules, name, 'own-link'));
  return prefix;
}

async function copy(prefix: string, name: string, root: string) {
  return packageCopy({
    install: { source: prefix, dest: '/run/mcp-sandbox/npm/k', mode: 'ro' },
    name,
    key: 'k',
    sessionRoot: root,
    state: undefined,
    step: plain,
  });
}

describe('packageCopy', () => {
  it.each(['server', '@scope/server'])(
    'copies %s and links every other entry to the install',
    async (name) => {
      const prefix = install(name);
      const root = mkdtempSync(join(dir, 'session-'));
      const made = await copy(prefix, name, root);
      expect(made.dir).toBe(join(root, 'pkg'));
      expect(made.bind).toEqual({ source: made.dir, dest: '/run/mcp-sandbox/npm/k', mode: 'rw' });
      const farm = join(made.dir, 'node_modules');
      // Its own package: a real copy, its links kept as links.
      expect(lstatSync(join(farm, name)).isDirectory()).toBe(true);
      expect(readFileSync(join(farm, name, 'index.js'), 'utf8')).toBe(name);
      expect(readlinkSync(join(farm, name, 'own-link'))).toBe('/etc');
      // .bin copied: its relative links now lead into the copy.
      expect(realpathSync(join(farm, '.bin', 'run'))).toBe(join(farm, name, 'index.js'));
      // Every other entry, odd names and planted links included: a link to the install's entry.
      // A scope: the package's own is a directory of links beside it, any other one a link.
      const scoped = name.startsWith('@scope/');
      for (const other of [
        'dep',
        scoped ? '@scope/dep' : '@scope',
        'odd\nname with spaces',
        '.package-lock.json',
        'evil',
      ]) {
        expect(readlinkSync(join(farm, other)), other).toBe(join(prefix, 'node_modules', other));
      }
      expect(lstatSync(join(farm, '@scope')).isDirectory()).toBe(scoped);
      // Nothing left of the build.
      expect(readdirSync(made.dir)).toEqual(['node_modules']);
    },
  );

  it('leaves a kept copy as it is and rebuilds over a build that was cut short', async () => {
    const prefix = install('server');
    const root = mkdtempSync(join(dir, 'session-'));
    const made = await copy(prefix, 'server', root);
    writeFileSync(join(made.dir, 'node_modules', 'server', 'memory.jsonl'), 'kept');
    // The same directory again (as a --state copy is): what the server wrote stays.
    const again = await packageCopy({
      install: { source: prefix, dest: '/run/mcp-sandbox/npm/k', mode: 'ro' },
      name: 'server',
      key: 'k',
      sessionRoot: root,
      state: {
        home: join(root, 'home'),
        release: () => {},
        packageCopy: () => ({ dir: made.dir, fresh: false }),
      },
      step: plain,
    });
    expect(again.persistent).toBe(true);
    expect(readFileSync(join(again.dir, 'node_modules', 'server', 'memory.jsonl'), 'utf8')).toBe('kept');
    // A build killed before its rename left only its temp directory: the next one starts over.
    const cut = mkdtempSync(join(dir, 'cut-'));
    mkdirSync(join(cut, '.farm-abc123', 'node_modules'), { recursive: true });
    const rebuilt = await packageCopy({
      install: { source: prefix, dest: '/run/mcp-sandbox/npm/k', mode: 'ro' },
      name: 'server',
      key: 'k',
      sessionRoot: root,
      state: { home: join(root, 'home'), release: () => {}, packageCopy: () => ({ dir: cut, fresh: false }) },
      step: plain,
    });
    expect(readdirSync(rebuilt.dir)).toEqual(['node_modules']);
    expect(lstatSync(join(rebuilt.dir, 'node_modules', 'server')).isDirectory()).toBe(true);
  });

  it('fails, saying so in printable words, when the install holds no directory for the package', async () => {
    const prefix = install('server');
    rmSync(join(prefix, 'node_modules', 'server'), { recursive: true });
    symlinkSync('/etc', join(prefix, 'node_modules', 'server'));
    const root = mkdtempSync(join(dir, 'session-'));
    await expect(copy(prefix, 'server', root)).rejects.toThrow(
      /could not make the server's package writable \(the copy step exited 3\): the install holds no directory for the package/,
    );
  });
});
