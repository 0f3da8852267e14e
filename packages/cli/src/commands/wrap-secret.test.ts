import { describe, expect, it } from 'vitest';
import type { ServerEntry } from '../config/servers.js';
import { wrapCommandFor } from './wrap-action.js';

describe('wrap with --secret', () => {
  it('a bound variable of the env block is not also forwarded with --env', () => {
    const entry = {
      name: 'github',
      section: 'mcpServers',
      property: {},
      kind: 'stdio',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-github'],
      envKeys: ['GITHUB_PERSONAL_ACCESS_TOKEN', 'OTHER'],
    } as unknown as ServerEntry;
    const wrapped = wrapCommandFor(entry, {
      launcher: ['mcp-sandbox', 'run'],
      runArgs: ['--allow-net', 'api.github.com', '--secret', 'GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com'],
    });
    const args = wrapped.runArgs.join(' ');
    expect(args).toContain('--secret GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com');
    expect(args).not.toContain('--env GITHUB_PERSONAL_ACCESS_TOKEN');
    expect(args).toContain('--env OTHER');
  });
});
