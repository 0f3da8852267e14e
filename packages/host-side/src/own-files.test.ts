import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ownFiles } from './own-files.js';

const base = mkdtempSync(join(tmpdir(), 'own-files-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const home = join(base, 'home', 'me');
const project = join(home, 'code', 'server');
mkdirSync(join(project, 'build'), { recursive: true });
writeFileSync(join(project, 'package.json'), '{}');
writeFileSync(join(project, 'build', 'index.js'), '');
mkdirSync(join(home, 'scripts'), { recursive: true });
writeFileSync(join(home, 'scripts', 'tool.py'), '');
writeFileSync(join(home, 'package.json'), '{}');
writeFileSync(join(home, 'loose.js'), '');
const roots = [join(base, 'home')];

describe('ownFiles', () => {
  it('shows the package root of an interpreter script given relatively, and makes the path absolute', () => {
    const own = ownFiles(['node', './build/index.js', '--port', '1'], project, roots, home);
    expect(own.command).toEqual(['node', join(project, 'build', 'index.js'), '--port', '1']);
    expect(own.binds).toEqual([{ source: project, dest: project, mode: 'ro' }]);
  });

  it('shows the directory of a file outside any package, never the home above it', () => {
    // ~/package.json exists, but the home itself is never shown.
    const own = ownFiles(['python3', 'scripts/tool.py'], home, roots, home);
    expect(own.binds).toEqual([{ source: join(home, 'scripts'), dest: join(home, 'scripts'), mode: 'ro' }]);
    const loose = ownFiles(['node', join(home, 'loose.js')], '/', roots, home);
    expect(loose.binds).toEqual([
      { source: join(home, 'loose.js'), dest: join(home, 'loose.js'), mode: 'ro' },
    ]);
  });

  it('leaves bare names, flags, missing files and visible paths alone', () => {
    expect(ownFiles(['node', '-e', 'x'], project, roots, home).binds).toEqual([]);
    // Another program's argument is its data: `cat ~/secret` shows nothing.
    expect(ownFiles(['my-server', 'build/index.js'], project, roots, home).binds).toEqual([]);
    expect(ownFiles(['cat', join(project, 'package.json')], project, roots, home).binds).toEqual([]);
    expect(ownFiles(['node', './missing.js'], project, roots, home)).toEqual({
      command: ['node', './missing.js'],
      binds: [],
      skipped: [],
    });
    expect(ownFiles(['/usr/bin/env', 'node'], project, roots, home).binds).toEqual([]);
  });

  it('never shows a credentials directory, even for an interpreter script there', () => {
    mkdirSync(join(home, '.ssh'), { recursive: true });
    writeFileSync(join(home, '.ssh', 'hook.py'), '');
    expect(ownFiles(['python3', join(home, '.ssh', 'hook.py')], '/', roots, home).binds).toEqual([]);
  });

  it('binds a command that is itself a script in the project', () => {
    const own = ownFiles(['./build/index.js'], project, roots, home);
    expect(own.command).toEqual([join(project, 'build', 'index.js')]);
    expect(own.binds).toEqual([{ source: project, dest: project, mode: 'ro' }]);
  });

  it('shows nothing on a path that passes through a tree a sandbox can write, however it gets there', () => {
    const shared = join(home, 'shared');
    mkdirSync(join(shared, 'dist'), { recursive: true });
    writeFileSync(join(shared, 'dist', 'index.js'), '');
    // The user's own link into the writable tree, and a writable link back out of it.
    symlinkSync(shared, join(home, 'via'));
    symlinkSync(join(project, 'build'), join(shared, 'out'));
    symlinkSync(join(shared, 'out'), join(home, 'round'));
    for (const path of [
      join(shared, 'dist', 'index.js'),
      join(home, 'via', 'dist', 'index.js'),
      join(home, 'round', 'index.js'),
    ]) {
      const own = ownFiles(['node', path], '/', roots, home, [shared]);
      expect(own.binds, path).toEqual([]);
      expect(own.skipped, path).toEqual([path]);
    }
    // Control: the same script, nothing writable on its way, is shown.
    expect(ownFiles(['node', join(home, 'round', 'index.js')], '/', roots, home).binds).toHaveLength(1);
  });
});
