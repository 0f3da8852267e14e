import { describe, expect, it } from 'vitest';
import { hashMismatch, parseCompiled, requirementsText, uvCause } from './resolved.js';
import { isUvxCommand, parseUvxCommand } from './spec.js';
import { pythonNeeded } from './tools.js';

describe('parseUvxCommand', () => {
  it('reads uvx and uv tool run, with a version in either spelling and --from', () => {
    expect(parseUvxCommand(['uvx', 'mcp-server-time==2026.10.19', '--local-timezone', 'UTC'])).toEqual({
      name: 'mcp-server-time',
      version: '2026.10.19',
      requirement: 'mcp-server-time==2026.10.19',
      bin: 'mcp-server-time',
      args: ['--local-timezone', 'UTC'],
    });
    expect(parseUvxCommand(['/usr/bin/uv', 'tool', 'run', 'pkg@1.0'])?.requirement).toBe('pkg==1.0');
    expect(parseUvxCommand(['uvx', '--from', 'pkg==2', 'cmd', '--', '-x'])).toMatchObject({
      requirement: 'pkg==2',
      bin: 'cmd',
      args: ['-x'],
    });
    expect(parseUvxCommand(['uvx', 'pkg@latest'])?.requirement).toBe('pkg');
    expect(parseUvxCommand(['npx', '-y', 'pkg'])).toBeUndefined();
    expect(parseUvxCommand(['uv', 'run', 'pkg'])).toBeUndefined();
    expect(isUvxCommand(['uvx', '--with', 'x'])).toBe(true);
  });

  it('refuses what it cannot install and pin: options it does not know, ranges, URLs, paths, extras', () => {
    for (const command of [
      ['uvx', '--with', 'requests', 'pkg'],
      ['uvx', '--index', 'https://evil.example/simple', 'pkg'],
      ['uvx', '--python', '3.13', 'pkg'],
      ['uvx', 'pkg>=1'],
      ['uvx', 'pkg[extra]'],
      ['uvx', 'git+https://example.com/x'],
      ['uvx', './local'],
      ['uvx', '--from', 'pkg', 'cmd==1'],
      ['uvx', '--from'],
      ['uvx'],
    ]) {
      expect(() => parseUvxCommand(command), command.join(' ')).toThrow(
        expect.objectContaining({ code: 'E_USAGE' }),
      );
    }
  });
});

describe('resolved sets', () => {
  const hash = `sha256:${'a'.repeat(64)}`;
  it('parses uv pip compile --generate-hashes output and writes it back from validated values', () => {
    const text = `anyio==4.0.0 \\\n    --hash=${hash}\nmcp-server-time==1.0 \\\n    --hash=${hash} \\\n    --hash=sha256:${'b'.repeat(64)}\n`;
    const dists = parseCompiled(text);
    expect(dists).toEqual([
      { name: 'anyio', version: '4.0.0', hashes: [hash] },
      { name: 'mcp-server-time', version: '1.0', hashes: [hash, `sha256:${'b'.repeat(64)}`] },
    ]);
    expect(parseCompiled(requirementsText(dists ?? []))).toEqual(dists);
  });

  it('refuses anything but name==version lines with sha256 hashes', () => {
    expect(parseCompiled(`pkg @ https://evil.example/x.whl \\\n    --hash=${hash}\n`)).toBeUndefined();
    expect(
      parseCompiled(`--index-url https://evil.example\npkg==1 \\\n    --hash=${hash}\n`),
    ).toBeUndefined();
    expect(parseCompiled('pkg==1\n')).toBeUndefined();
    expect(parseCompiled(`pkg==1 \\\n    --hash=md5:abc\n`)).toBeUndefined();
    expect(parseCompiled('')).toBeUndefined();
  });

  it("names what changed from uv's hash refusal, and the Python a package needs", () => {
    expect(
      hashMismatch(
        `error: Hash mismatch for \`swap-demo==1.0\`\n\nExpected:\n  ${hash}\n\nComputed:\n  sha256:${'c'.repeat(64)}`,
      ),
    ).toBe(`swap-demo==1.0 (the index now serves sha256 ${'c'.repeat(64)})`);
    expect(hashMismatch('error: something else')).toBeUndefined();
    expect(pythonNeeded('Because x==1 requires Python >=3.13 and you require x==1', '3.11.2')).toMatch(
      /needs Python >=3\.13, and the host's Python is 3\.11\.2 .*; install one \(uv python install 3\.13\), then start again/,
    );
  });

  it("reads uv's own cause: an HTTP status, no solution, a failed build; escapes what build code printed", () => {
    expect(
      uvCause(
        'error: Failed to fetch\n  Caused by: HTTP status client error (404 Not Found) for url (https://i.example/simple/x/)',
      ),
    ).toBe('the index answered HTTP 404 for https://i.example/simple/x/');
    expect(uvCause('hint: An index (http://10.0.0.1/simple) returned a 403 Forbidden error.')).toBe(
      'the index http://10.0.0.1/simple answered HTTP 403',
    );
    expect(
      uvCause('  × No solution found when resolving dependencies:\n  ╰─▶ Because x==2 was not found, …'),
    ).toMatch(/^no set of versions satisfies it: Because x==2 was not found, \?$/);
    expect(uvCause('error: Failed to build `evil\u001b[2J @ file`\n')).toBe(
      'building evil?[2J @ file from its source distribution failed (its output is below)',
    );
    expect(uvCause('something else')).toBeUndefined();
  });
});
