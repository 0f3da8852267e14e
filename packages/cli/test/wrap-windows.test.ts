/**
 * wrap on Windows (the platform injected): entries start `wsl.exe -e mcp-sandbox run …`, the
 * Windows paths they name are translated to /mnt/<drive>/… and mounted, never the home or its
 * settings, whatever the spelling; unwrap gives back the Windows spelling.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { locateConfig } from '../src/config/clients.js';
import { windowsPathMountsFor, windowsRefusal, windowsSpelling } from '../src/config/windows-mounts.js';
import { FIXTURES, fixture, sandboxHome } from './helpers.js';

const HOME = 'C:\\Users\\me';

describe('Windows paths a config names: each refused, or translated to exactly one safe path', () => {
  const REFUSED: readonly [string, RegExp][] = [
    ['\\\\?\\C:\\Users\\me\\projects', /WSL cannot see it/],
    ['\\\\.\\C:\\Users\\me\\projects', /WSL cannot see it/],
    ['\\\\server\\share\\data', /WSL cannot see it/],
    ['//server/share/data', /WSL cannot see it/],
    ['C:..\\Users\\me', /WSL cannot see it/],
    ['C:foo', /WSL cannot see it/],
    ['C:\\Users\\me\\..\\..\\Windows', /WSL cannot see it/],
    ['C:\\Users\\me\\projects\\..\\.ssh', /WSL cannot see it/],
    ['C:\\Users\\me\\projects\u0000\\x', /WSL cannot see it/],
    ['C:\\Users\\me\\projects\n--mount /:/:rw', /WSL cannot see it/],
    ['C:\\Users\\me\\projects\\file.txt:stream', /WSL cannot see it/],
    ['C:\\Users\\me\\projects\\file.txt::$DATA', /WSL cannot see it/],
    ['C:/Users/me/projects', /spelled other than/],
    ['C:\\Users/me\\projects', /spelled other than/],
    ['c:\\Users\\me\\projects', /spelled other than/],
    ['C:\\Users\\me\\\\projects', /spelled other than/],
    ['C:\\Users\\me\\projects\\', /spelled other than/],
    ['C:\\', /the root of a drive/],
    ['D:\\', /the root of a drive/],
    ['C:\\Users\\me', /the home folder/],
    ['C:\\USERS\\ME', /the home folder/],
    ['C:\\Users', /above the home/],
    ['C:\\Users\\me\\.ssh', /credentials or settings/],
    ['C:\\Users\\ME\\.SSH\\id_ed25519', /credentials or settings/],
    ['C:\\Users\\me\\AppData\\Roaming\\Claude', /credentials or settings/],
    ['C:\\Users\\me\\.aws', /credentials or settings/],
    ['C:\\Users\\someone\\.ssh', /credentials or settings/],
    ['C:\\Users\\someone', /a home folder/],
    ['C:\\Users\\me.\\.ssh', /dot or space/],
    ['C:\\Users\\me \\.ssh', /dot or space/],
    ['C:\\Users\\me\\.ssh.', /dot or space/],
    ['C:\\PROGRA~1\\app', /8\.3 short name/],
    ['C:\\Users\\MYNAME~1\\Documents', /8\.3 short name/],
    ['C:\\Users\\me\\projects\\NUL', /device name/],
    ['C:\\Users\\me\\projects\\con.txt', /device name/],
    ['C:\\Windows\\System32\\config', /system folder/],
    ['C:\\ProgramData\\ssh', /system folder/],
    ['C:\\Program Files', /system folder/],
    ['C:\\$Recycle.Bin\\S-1-5-21', /system folder/],
    ['C:\\Users\\Public\\Documents', /system folder/],
  ];

  it.each(REFUSED)('%j is refused (%s), left as it is and not mounted', (path, reason) => {
    expect(windowsRefusal(path, HOME)).toMatch(reason);
    const found = windowsPathMountsFor(['npx', '-y', 'pkg', path, `--dir=${path}`], {
      rw: false,
      home: HOME,
    });
    expect(found.mounts).toEqual([]);
    expect(found.server).toEqual(['npx', '-y', 'pkg', path, `--dir=${path}`]);
    expect(found.refused.map((r) => r.path)).toEqual([path]);
  });

  it('without %USERPROFILE% every user folder and its settings are still refused', () => {
    expect(windowsRefusal('C:\\Users\\me', undefined)).toMatch(/a home folder/);
    expect(windowsRefusal('C:\\Users\\me\\.ssh', undefined)).toMatch(/credentials or settings/);
    expect(windowsRefusal('C:\\Users\\me\\AppData\\Local', undefined)).toMatch(/credentials or settings/);
  });

  it('an ordinary folder becomes its one /mnt spelling, mounted, and turns back letter for letter', () => {
    const cases: [string, string][] = [
      ['C:\\Users\\me\\projects\\notes', '/mnt/c/Users/me/projects/notes'],
      ['D:\\data\\My Notes', '/mnt/d/data/My Notes'],
      ['C:\\work\\café', '/mnt/c/work/café'],
    ];
    for (const [windows, wsl] of cases) {
      const found = windowsPathMountsFor(['npx', '-y', 'pkg', windows, `--root=${windows}`], {
        rw: false,
        home: HOME,
      });
      expect(found.server).toEqual(['npx', '-y', 'pkg', wsl, `--root=${wsl}`]);
      expect(found.mounts).toEqual([{ path: wsl, mode: 'ro' }]);
      expect(windowsSpelling(wsl)).toBe(windows);
    }
  });

  it('a word that is already a WSL path is left as the config has it on a first wrap', () => {
    const found = windowsPathMountsFor(['npx', 'pkg', '/mnt/c/Users/me/.ssh', '/mnt/c/data'], {
      rw: false,
      home: HOME,
    });
    expect(found.mounts).toEqual([]);
    expect(found.server).toEqual(['npx', 'pkg', '/mnt/c/Users/me/.ssh', '/mnt/c/data']);
    // Re-wrapping one wrap wrote: mounted again, under the same rule.
    const again = windowsPathMountsFor(['npx', 'pkg', '/mnt/c/Users/me/.ssh', '/mnt/c/data'], {
      rw: false,
      home: HOME,
      rewrap: true,
    });
    expect(again.mounts).toEqual([{ path: '/mnt/c/data', mode: 'ro' }]);
    expect(again.refused.map((r) => r.path)).toEqual(['/mnt/c/Users/me/.ssh']);
  });
});

describe("Claude Desktop's config on Windows", () => {
  it('is %APPDATA%\\Claude\\claude_desktop_config.json', () => {
    const location = locateConfig('claude-desktop', false, {
      platform: 'win32',
      env: { APPDATA: 'C:\\Users\\me\\AppData\\Roaming', USERPROFILE: HOME },
      cwd: 'C:\\Users\\me',
    });
    expect(location.file).toBe('C:\\Users\\me\\AppData\\Roaming\\Claude\\claude_desktop_config.json');
  });
});

describe('wrap and unwrap of a Windows-shaped Claude Desktop config', () => {
  let h: ReturnType<typeof sandboxHome> | undefined;
  afterEach(() => h?.cleanup());
  const original = fixture('claude-desktop-windows/original.txt');

  async function wrapped() {
    h = sandboxHome();
    h.env.USERPROFILE = HOME;
    const file = join(h.root, 'claude_desktop_config.json');
    writeFileSync(file, original);
    const args = ['wrap', '--client', 'claude-desktop', '--config', file, '--all'];
    const result = await h.run(args, { platform: 'win32' });
    return { h, file, result };
  }

  it('writes wsl.exe -e mcp-sandbox run entries with /mnt mounts (golden), refusing the home', async () => {
    const { file, result } = await wrapped();
    expect(result.code, result.stderr).toBe(0);
    const text = readFileSync(file, 'utf8');
    const golden = join(FIXTURES, 'claude-desktop-windows', 'wrapped.txt');
    if (process.env.UPDATE_GOLDEN) writeFileSync(golden, text);
    expect(text).toBe(readFileSync(golden, 'utf8'));
    const servers = JSON.parse(text).mcpServers;
    expect(servers.filesystem).toEqual({
      command: 'wsl.exe',
      args: [
        '-e',
        'mcp-sandbox',
        'run',
        '--mount',
        '/mnt/c/Users/me/Documents/notes:/mnt/c/Users/me/Documents/notes:rw',
        '--mount',
        '/mnt/d/shared/design:/mnt/d/shared/design:rw',
        '--',
        'npx',
        '-y',
        '@modelcontextprotocol/server-filesystem',
        '/mnt/c/Users/me/Documents/notes',
        '/mnt/d/shared/design',
      ],
    });
    // The hostile entry: only its ordinary folder crosses; the home, its keys and settings do not.
    const sneaky = servers.sneaky.args as string[];
    expect(sneaky.filter((_a, i) => sneaky[i - 1] === '--mount')).toEqual([
      '/mnt/c/Users/me/Documents/app.db:/mnt/c/Users/me/Documents/app.db:ro',
    ]);
    expect(sneaky.join(' ')).not.toMatch(/\/mnt\/c\/Users\/me(\/\.ssh|\/AppData)?(:| |$)/);
    expect(result.stderr).toMatch(/sneaky: not mounted: .*C:\\Users\\me \(the home folder\)/);
    expect(result.stderr).toMatch(/C:\\Users\\me\\\.ssh \(a credentials or settings folder\)/);
    expect(result.stderr).toMatch(/github: on Windows its "env" block reaches WSL only through WSLENV/);
  });

  it('the entries read as sandboxed, and unwrap gives back the original bytes without the backup', async () => {
    const { h: home, file } = await wrapped();
    const args = ['--client', 'claude-desktop', '--config', file, '--all'];
    const again = await home.run(['wrap', ...args], { platform: 'win32' });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/filesystem: skipped \(already sandboxed/);
    expect(again.stderr).toContain('nothing to change');
    for (const backup of home.backups(file)) rmSync(backup);
    const unwrap = await home.run(['unwrap', ...args], { platform: 'win32' });
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(original);
  });

  it('--mount of the home given to wrap is refused; an ordinary folder is translated', async () => {
    h = sandboxHome();
    h.env.USERPROFILE = HOME;
    const file = join(h.root, 'claude_desktop_config.json');
    writeFileSync(file, original);
    const base = ['wrap', '--client', 'claude-desktop', '--config', file, '--server', 'github'];
    const home = await h.run([...base, '--mount', 'C:\\Users\\me:rw'], { platform: 'win32' });
    expect(home.code).toBe(2);
    expect(home.stderr).toContain('the home folder');
    expect(readFileSync(file, 'utf8')).toBe(original);
    const ok = await h.run([...base, '--mount', 'D:\\data'], { platform: 'win32' });
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8')).mcpServers.github.args.slice(0, 6)).toEqual([
      '-e',
      'mcp-sandbox',
      'run',
      '--mount',
      '/mnt/d/data:/mnt/d/data:ro',
      // Inside WSL the backend is local, which substitutes: a known server's token becomes --secret.
      '--allow-net',
    ]);
    expect(existsSync(file)).toBe(true);
  });
});
