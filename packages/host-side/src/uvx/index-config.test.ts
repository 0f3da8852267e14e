import { describe, expect, it } from 'vitest';
import { indexOfConfig, userPythonIndex } from './index-config.js';

const files = (map: Record<string, string>) => (path: string) => map[path];

describe('the Python index from the user settings', () => {
  it('takes the variables first, then the user-level uv.toml, then the system one, else PyPI', () => {
    const env = { HOME: '/home/u', UV_INDEX_URL: 'https://mirror.example/simple/' };
    expect(userPythonIndex(env, files({})).url).toBe('https://mirror.example/simple');
    expect(userPythonIndex({ ...env, UV_DEFAULT_INDEX: 'https://a.example/s' }, files({})).source).toBe(
      'UV_DEFAULT_INDEX',
    );
    const user = '[[index]]\nurl = "https://corp.example/simple"\ndefault = true\n';
    const system = 'index-url = "https://system.example/simple"\n';
    const both = files({ '/home/u/.config/uv/uv.toml': user, '/etc/uv/uv.toml': system });
    expect(userPythonIndex({ HOME: '/home/u' }, both)).toMatchObject({
      url: 'https://corp.example/simple',
      source: '/home/u/.config/uv/uv.toml',
    });
    expect(userPythonIndex({ HOME: '/home/u', XDG_CONFIG_HOME: '/x' }, both).url).toBe(
      'https://system.example/simple',
    );
    expect(userPythonIndex({ HOME: '/home/u', UV_NO_CONFIG: '1' }, both).url).toBe('https://pypi.org/simple');
    expect(userPythonIndex({ HOME: '/home/u', UV_CONFIG_FILE: '/etc/uv/uv.toml' }, both).url).toBe(
      'https://system.example/simple',
    );
    expect(userPythonIndex({}, files({})).source).toBe('default');
  });

  it('never reads a file named by a relative path (the working folder may be a server mount)', () => {
    const read: string[] = [];
    const spy = (path: string) => {
      read.push(path);
      return undefined;
    };
    userPythonIndex(
      { HOME: 'home', XDG_CONFIG_HOME: '.', UV_CONFIG_FILE: 'uv.toml', XDG_CONFIG_DIRS: 'etc:/d' },
      spy,
    );
    expect(read).toEqual(['/d/uv/uv.toml', '/etc/uv/uv.toml']);
  });

  it('refuses credentials, other schemes, and what it cannot read plainly, saying what to set', () => {
    const env = { HOME: '/h' };
    const bad = (text: string) => () => userPythonIndex(env, files({ '/h/.config/uv/uv.toml': text }));
    expect(bad('index-url = "https://user:pw@corp.example/simple"')).toThrow(/without credentials/);
    expect(bad('index-url = "file:///srv/wheels"')).toThrow(/http\(s\) URL/);
    expect(bad('extra-index-url = ["https://x.example/simple"]')).toThrow(/one index.*UV_DEFAULT_INDEX/s);
    expect(bad('[[index]]\nurl = "https://x.example/simple"\n')).toThrow(/not the default/);
    expect(bad('index-url = """\nhttps://x.example/simple"""')).toThrow(/multi-line/);
    expect(bad('index = [{ url = "https://x.example/simple", default = true }]')).toThrow(/inline/);
    expect(bad('index-url = https://x.example')).toThrow(/not a plain string/);
  });

  it('reads only what names an index: other tables and explicit indexes leave it alone', () => {
    const text = [
      '# settings',
      "cache-dir = '/tmp/c'",
      '[pip]',
      'index-url = "https://pip-only.example/simple"',
      '[[index]]',
      'name = "private"',
      "url = 'https://private.example/simple'",
      'explicit = true',
      '[[index]]',
      'url = "https://corp.example/simple" # the mirror',
      'default = true',
    ].join('\n');
    expect(indexOfConfig(text, 'f')).toBe('https://corp.example/simple');
    expect(indexOfConfig('[pip]\nindex-url = "https://pip-only.example/simple"\n', 'f')).toBeUndefined();
  });
});
