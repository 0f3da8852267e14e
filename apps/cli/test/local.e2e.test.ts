import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { connect, EVERYTHING, spawnBin } from './helpers.js';

// The server's files live in this repository; wherever CI clones it (even under a hidden /tmp),
// granting it read-only is all the sandbox shows of the host beyond the system.
const REPO = fileURLToPath(new URL('../../..', import.meta.url));

describe('mcp-sandbox run on the default backend (local)', () => {
  it('serves server-everything from the OS sandbox: 13 tools, a call, exactly the allowed env', async () => {
    const { client, stderr } = await connect(
      [
        '--mount',
        `${REPO}:ro`,
        '--env',
        'ALLOWED_VAR',
        '--env',
        'SET_VAR=x=y',
        '--',
        'node',
        EVERYTHING,
        'stdio',
      ],
      { ALLOWED_VAR: 'allowed', SECRET_TOKEN: 'never-crosses' },
    );
    try {
      expect((await client.listTools()).tools).toHaveLength(13);
      const sum = await client.callTool({ name: 'get-sum', arguments: { a: 20, b: 22 } });
      expect(JSON.stringify(sum.content)).toContain('42');
      const result = await client.callTool({ name: 'get-env', arguments: {} });
      const env = JSON.parse((result.content as Array<{ text: string }>)[0]?.text ?? '{}') as Record<
        string,
        string
      >;
      expect(Object.keys(env).sort()).toEqual(['ALLOWED_VAR', 'HOME', 'LANG', 'PATH', 'SET_VAR', 'TMPDIR']);
      expect(env.ALLOWED_VAR).toBe('allowed');
      expect(env.SET_VAR).toBe('x=y');
      expect(env.HOME).not.toBe(process.env.HOME);
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('backend local, isolation os');
  });

  it('inspect on local lists the same 13 tools', async () => {
    const result = await spawnBin(['inspect', '--json', '--mount', `${REPO}:ro`, '--', 'node', EVERYTHING])
      .result;
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout.toString());
    expect(report.tools).toHaveLength(13);
    expect(report.isolation).toBe('os');
  });
});
