/**
 * wrap and ls read a uvx entry with a parser of their own (the CLI does not load the install
 * code): it must refuse exactly what the install step refuses, and name the same package, or ls
 * would call an entry fine that run then refuses (or the reverse).
 */

import { pythonStart } from '@mcpsandbox/cli';
import { parseUvxCommand } from '@mcpsandbox/host-side';
import { describe, expect, it } from 'vitest';

const CORPUS: readonly (readonly string[])[] = [
  ['uvx', 'mcp-server-time'],
  ['uvx', 'mcp-server-time==2026.10.19', '--local-timezone=UTC'],
  ['uvx', 'mcp-server-time@2026.10.19'],
  ['uvx', 'mcp-server-time@latest'],
  ['uvx', '-q', '--no-progress', 'mcp-server-fetch'],
  ['uvx', '--from', 'mcp-memory-service==12.4.0', 'memory-server'],
  ['uvx', '--from=awslabs.core-mcp-server@latest', 'awslabs.core-mcp-server'],
  ['uvx', '--from', 'x==1', 'x==2'],
  ['uvx', '--from'],
  ['uvx'],
  ['uvx', '--from', 'git+https://evil.example/x.git', 'x'],
  ['uvx', '--from', '/tmp/evil', 'x'],
  ['uvx', '--from', 'x[extra]', 'x'],
  ['uvx', 'x>=1'],
  ['uvx', 'https://evil.example/x.whl'],
  ['uvx', './x'],
  ['uvx', '--with', 'y', 'x'],
  ['uvx', '--python', '/tmp/x/python', 'x'],
  ['uvx', '--index-url', 'https://evil.example/simple', 'x'],
  ['uvx', '--default-index=https://evil.example/simple', 'x'],
  ['uvx', '-i', 'https://evil.example/simple', 'x'],
  ['uvx', '--directory', '/tmp', 'x'],
  ['uvx', '--isolated', 'x'],
  ['uvx', 'x', '--', '--flag'],
  ['uv', 'tool', 'run', 'mcp-server-time'],
  ['uv', 'tool', 'run', '--with', 'y', 'x'],
  ['/usr/local/bin/uvx', 'mcp_server_git', '--repository', '/r'],
];

const normal = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-');

describe('the CLI and the install step read uvx entries alike', () => {
  it.each(CORPUS.map((argv) => [argv]))('%j', (argv) => {
    let installs: string | undefined;
    try {
      installs = parseUvxCommand(argv)?.name;
    } catch {
      installs = undefined;
    }
    const start = pythonStart(argv);
    expect(start?.refused === undefined).toBe(installs !== undefined);
    if (installs !== undefined) expect(start?.pkg).toBe(normal(installs));
  });
});
