import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { managedPythons, satisfies, uvPythonDir } from './managed-pythons.js';

const root = mkdtempSync(join(tmpdir(), 'managed-pythons-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A uv-like Python directory: `bin/python3.X` (an ELF file) and uv's `bin/python3` link to it. */
function python(dir: string, name: string): string {
  const bin = join(dir, name, 'bin');
  mkdirSync(bin, { recursive: true, mode: 0o755 });
  copyFileSync('/bin/true', join(bin, 'python3.99'));
  chmodSync(join(bin, 'python3.99'), 0o755);
  symlinkSync('python3.99', join(bin, 'python3'));
  return join(bin, 'python3');
}

describe("the user's uv-managed Pythons", () => {
  it('finds them where uv does, from absolute settings only', () => {
    expect(uvPythonDir({ UV_PYTHON_INSTALL_DIR: '/p', XDG_DATA_HOME: '/d', HOME: '/h' })).toBe('/p');
    expect(uvPythonDir({ XDG_DATA_HOME: '/d', HOME: '/h' })).toBe('/d/uv/python');
    expect(uvPythonDir({ UV_PYTHON_INSTALL_DIR: 'rel', HOME: '/h' })).toBe('/h/.local/share/uv/python');
    expect(uvPythonDir({ HOME: '.' })).toBeUndefined();
  });

  it('lists the CPythons, newest first, with the version from the name (never run on the host)', () => {
    const dir = join(root, 'ok');
    mkdirSync(dir, { mode: 0o755 });
    const old = python(dir, 'cpython-3.12.1-linux-x86_64-gnu');
    const recent = python(dir, 'cpython-3.13.0-linux-x86_64-gnu');
    python(dir, 'pypy-3.10.14-linux-x86_64-gnu');
    expect(managedPythons({ UV_PYTHON_INSTALL_DIR: dir }, [])).toEqual([
      { python: recent, pythonVersion: '3.13.0' },
      { python: old, pythonVersion: '3.12.1' },
    ]);
  });

  it('refuses what a server could have planted: links out, foreign or shared folders, its own rw mounts', () => {
    const dir = join(root, 'planted');
    mkdirSync(dir, { mode: 0o755 });
    // A Python whose binary is a link to a file outside its directory.
    const out = join(dir, 'cpython-3.14.0-linux-x86_64-gnu', 'bin');
    mkdirSync(out, { recursive: true, mode: 0o755 });
    symlinkSync('/bin/true', join(out, 'python3'));
    // A Python directory that is itself a link.
    python(root, 'elsewhere');
    symlinkSync(join(root, 'elsewhere'), join(dir, 'cpython-3.14.1-linux-x86_64-gnu'));
    // A Python directory others may write.
    python(dir, 'cpython-3.14.2-linux-x86_64-gnu');
    chmodSync(join(dir, 'cpython-3.14.2-linux-x86_64-gnu'), 0o777);
    const good = python(dir, 'cpython-3.13.5-linux-x86_64-gnu');
    if (process.getuid?.() === 0) {
      // Another user's Python (as root the tests can make one).
      python(dir, 'cpython-3.14.3-linux-x86_64-gnu');
      chownSync(join(dir, 'cpython-3.14.3-linux-x86_64-gnu'), 65534, 65534);
    }
    expect(managedPythons({ UV_PYTHON_INSTALL_DIR: dir }, [])).toEqual([
      { python: good, pythonVersion: '3.13.5' },
    ]);
    // The folder under (or over) a path this session mounts read-write: none of it is taken.
    expect(managedPythons({ UV_PYTHON_INSTALL_DIR: dir }, [root])).toEqual([]);
    expect(managedPythons({ UV_PYTHON_INSTALL_DIR: dir }, [join(dir, 'x')])).toEqual([]);
    // A folder that is a link, or that others may write.
    symlinkSync(dir, join(root, 'link'));
    expect(managedPythons({ UV_PYTHON_INSTALL_DIR: join(root, 'link') }, [])).toEqual([]);
    chmodSync(dir, 0o777);
    expect(managedPythons({ UV_PYTHON_INSTALL_DIR: dir }, [])).toEqual([]);
  });

  it('says whether a version meets what uv said the package needs', () => {
    expect(satisfies('3.13.0', { op: '>=', version: '3.12' })).toBe(true);
    expect(satisfies('3.11.9', { op: '>=', version: '3.12' })).toBe(false);
    expect(satisfies('3.12.0', { op: '>', version: '3.12' })).toBe(false);
    expect(satisfies('3.12.4', { op: '~=', version: '3.12.1' })).toBe(true);
    expect(satisfies('3.13.0', { op: '~=', version: '3.12.1' })).toBe(false);
    expect(satisfies('3.12.7', { op: '==', version: '3.12' })).toBe(true);
  });
});
