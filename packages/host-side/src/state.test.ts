import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkStateName, listStates, openState, removeState, StateInUseError } from './state.js';

const base = mkdtempSync(join(tmpdir(), 'state-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('named state', () => {
  it('accepts plain names and refuses paths and dots', () => {
    expect(checkStateName('memory')).toBe('memory');
    expect(checkStateName('my.server_2-x')).toBe('my.server_2-x');
    for (const bad of ['', '../x', 'a/b', '.hidden', '-x', 'a..b', 'x'.repeat(65)]) {
      expect(() => checkStateName(bad)).toThrow(/a state name is/);
    }
  });

  it('creates home and package copies once, lists them, and removes them without following links', async () => {
    const root = join(base, 'root');
    const outside = join(base, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'keep.txt'), 'host file');
    const first = openState(root, 'memory', undefined);
    expect(first.packageCopy('abc').fresh).toBe(true);
    expect(first.packageCopy('abc').fresh).toBe(false);
    // What a server could leave in its writable area: a file, and links to host paths.
    writeFileSync(join(first.home, 'data.json'), '{"x":1}');
    symlinkSync(outside, join(first.home, 'link-to-dir'));
    symlinkSync(join(outside, 'keep.txt'), join(first.packageCopy('abc').dir, 'link-to-file'));
    first.release();

    const [listed] = listStates(root);
    expect(listed?.name).toBe('memory');
    expect(listed?.files).toBe(3);

    expect(removeState(root, 'memory')).toBe(true);
    expect(removeState(root, 'memory')).toBe(false);
    expect(existsSync(join(outside, 'keep.txt'))).toBe(true);
    expect(readdirSync(root)).toEqual([]);
  });

  it('refuses to remove a state a live session holds', async () => {
    const root = join(base, 'busy');
    const held = openState(root, 'fs', undefined);
    // Another live process's claim, as a concurrent session would leave it.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    writeFileSync(join(root, 'fs', `.session-${other.pid}`), '');
    try {
      expect(() => removeState(root, 'fs')).toThrow(StateInUseError);
    } finally {
      other.kill('SIGKILL');
      await new Promise((resolve) => other.once('exit', resolve));
    }
    held.release();
    expect(removeState(root, 'fs')).toBe(true);
  });
});
