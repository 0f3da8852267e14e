import { describe, expect, it } from 'vitest';
import { wslCheck } from '../src/doctor/checks.js';
import type { DoctorHost, ExecResult } from '../src/index.js';
import { parseWslList, wslMountFlag, wslPath, wslRunCommand } from '../src/wsl.js';

describe('Windows through WSL2: paths', () => {
  it('a drive path becomes its /mnt/<drive> spelling', () => {
    expect(wslPath('C:\\Users\\me\\project')).toBe('/mnt/c/Users/me/project');
    expect(wslPath('d:/data/My Notes')).toBe('/mnt/d/data/My Notes');
    expect(wslMountFlag('C:\\Users\\me\\project\\', 'ro')).toBe(
      '/mnt/c/Users/me/project:/mnt/c/Users/me/project:ro',
    );
  });

  it('what WSL does not show at /mnt, or a path that climbs out, is refused with what to do', () => {
    for (const path of [
      '\\\\server\\share\\x',
      '\\\\?\\C:\\x',
      '\\\\wsl$\\Ubuntu\\home',
      'C:relative',
      'project',
      'C:\\Users\\me\\..\\..\\Windows',
      'C:\\Users\\me\\file.txt:stream',
      'C:\\Users\\me\\a"b',
      'C:\\Users\\me\\x\n--mount /:/:rw',
      'C:\\Users\\me\\x\u0000y',
    ]) {
      expect(() => wslPath(path), path).toThrow(/cannot be mounted through WSL/);
    }
  });

  it('the client starts wsl.exe -e mcp-sandbox run with no shell in between', () => {
    expect(wslRunCommand(['--mount', wslMountFlag('C:\\p', 'ro'), '--', 'npx', '-y', 'pkg'])).toEqual([
      'wsl.exe',
      '-e',
      'mcp-sandbox',
      'run',
      '--mount',
      '/mnt/c/p:/mnt/c/p:ro',
      '--',
      'npx',
      '-y',
      'pkg',
    ]);
  });
});

const utf16ish = (text: string) => [...text].join('\u0000');
const LIST = utf16ish(
  '  NAME            STATE           VERSION\r\n* Ubuntu-24.04    Running         2\r\n  legacy          Stopped         1\r\n',
);

function windows(result: ExecResult): DoctorHost {
  return {
    platform: 'win32',
    env: {},
    exec: async (file) =>
      file === 'wsl.exe' ? result : { started: false, code: null, stdout: '', stderr: 'ENOENT' },
    readText: async () => undefined,
    folderSize: async () => undefined,
  };
}

describe('doctor on Windows: WSL2', () => {
  it('reads wsl.exe -l -v (UTF-16) for WSL2 distributions', () => {
    expect(parseWslList(LIST)).toEqual([
      { name: 'Ubuntu-24.04', version: 2 },
      { name: 'legacy', version: 1 },
    ]);
  });

  it('a WSL2 distribution: how to run local inside it', async () => {
    const result = await wslCheck(windows({ started: true, code: 0, stdout: LIST, stderr: '' })).run();
    expect(result.status).toBe('ok');
    expect(result.summary).toContain('wsl.exe -e mcp-sandbox run -- <server>');
  });

  it('no WSL, or WSL1 only: fails with the command that fixes it', async () => {
    const none = await wslCheck(windows({ started: false, code: null, stdout: '', stderr: 'ENOENT' })).run();
    expect(none).toMatchObject({ status: 'fail', fix: expect.stringContaining('wsl --install') });
    const one = await wslCheck(
      windows({
        started: true,
        code: 0,
        stdout: utf16ish('  NAME STATE VERSION\r\n* old Running 1\r\n'),
        stderr: '',
      }),
    ).run();
    expect(one).toMatchObject({ status: 'fail', fix: 'wsl --set-version old 2' });
  });
});
