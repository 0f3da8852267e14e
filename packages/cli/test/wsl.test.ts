import { afterEach, describe, expect, it } from 'vitest';
import { wslCheck } from '../src/doctor/checks.js';
import type { DoctorHost, ExecResult } from '../src/index.js';
import { parseWslList, wslMountFlag, wslPath, wslRunCommand } from '../src/wsl.js';
import { sandboxHome } from './helpers.js';

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

describe('run on Windows: local is bubblewrap inside WSL2', () => {
  const list =
    (stdout: string, started = true) =>
    async () => ({ started, code: started ? 0 : null, stdout });
  let h: ReturnType<typeof sandboxHome> | undefined;
  afterEach(() => h?.cleanup());

  it('with a WSL2 distribution: exits non-zero with the exact wsl.exe command, and starts nothing', async () => {
    h = sandboxHome();
    const created: string[] = [];
    const result = await h.run(['run', '--', 'npx', '-y', '@modelcontextprotocol/server-everything'], {
      platform: 'win32',
      wslList: list(LIST),
      backends: {
        local: {
          summary: 'pretend local',
          isolation: 'os',
          create: async () => {
            created.push('local');
            throw new Error('must not be created');
          },
        },
      },
    });
    expect(result.code).toBe(125);
    expect(result.stdout).toBe('');
    expect(created).toEqual([]);
    expect(result.stderr).toContain(
      'WSL2 is here (Ubuntu-24.04): run wsl.exe -e mcp-sandbox run -- npx -y @modelcontextprotocol/server-everything',
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('without WSL, or with WSL1 only: the command that fixes it first', async () => {
    h = sandboxHome();
    const none = await h.run(['run', '--', 'uvx', 'mcp-server-fetch'], {
      platform: 'win32',
      wslList: list('', false),
    });
    expect(none.code).toBe(125);
    expect(none.stderr).toContain(
      'WSL is not installed: wsl --install (a WSL2 Ubuntu), then run wsl.exe -e mcp-sandbox run -- uvx mcp-server-fetch',
    );
    const one = await h.run(['run', '--', 'node', 'C:\\my server\\index.js'], {
      platform: 'win32',
      wslList: list(utf16ish('  NAME STATE VERSION\r\n* old Running 1\r\n')),
    });
    expect(one.code).toBe(125);
    expect(one.stderr).toContain(
      'wsl --set-version old 2, then run wsl.exe -e mcp-sandbox run -- node "C:\\\\my server\\\\index.js"',
    );
  });

  it('another backend, or another OS, is not stopped', async () => {
    h = sandboxHome();
    const refused = async () => {
      throw new Error('wsl.exe must not be asked');
    };
    const other = await h.run(['run', '--backend', 'e2b', '--', 'node', '-e', '0'], {
      platform: 'win32',
      wslList: refused,
    });
    expect(other.stderr).not.toContain('WSL');
    const linux = await h.run(['run', '--', 'node', '-e', '0'], { platform: 'linux', wslList: refused });
    expect(linux.stderr).not.toContain('WSL');
  });
});
