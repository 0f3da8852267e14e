import { describe, expect, it } from 'vitest';
import { connect, EVERYTHING } from './helpers.js';

// server-everything lists 13 tools to a client that advertises no capabilities (pinned in connect()).
const EVERYTHING_TOOLS = 13;

describe('the real SDK Client through `mcp-sandbox run`', () => {
  it('initializes, lists and calls tools of server-everything on `none`', async () => {
    const { client } = await connect(['--backend', 'none', '--', process.execPath, EVERYTHING, 'stdio']);
    try {
      expect(client.getServerVersion()?.name).toBe('mcp-servers/everything');
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(EVERYTHING_TOOLS);
      const echo = await client.callTool({ name: 'echo', arguments: { message: 'through the bridge' } });
      expect(echo.content).toEqual([{ type: 'text', text: 'Echo: through the bridge' }]);
    } finally {
      await client.close();
    }
  });

  it('initializes, lists and calls tools of the fake server on `fake`', async () => {
    const { client } = await connect(['--backend', 'fake', '--', 'fake-mcp-server']);
    try {
      expect(client.getServerVersion()?.name).toBe('fake-mcp-server');
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('add');
      const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } });
      expect(JSON.stringify(sum.content)).toContain('42');
    } finally {
      await client.close();
    }
  });

  it('passes exactly the --env allowlist (plus PATH, HOME, TMPDIR, LANG) on `none`', async () => {
    const { client, stderr } = await connect(
      [
        '--backend',
        'none',
        '--env',
        'FORWARDED_ONE',
        '--env',
        'SET_HERE=a=b',
        '--',
        process.execPath,
        EVERYTHING,
      ],
      { FORWARDED_ONE: 'from-host', NOT_FORWARDED_TOKEN: 'must-not-cross', LANG: 'C.UTF-8' },
    );
    try {
      const result = await client.callTool({ name: 'get-env', arguments: {} });
      const text = (result.content as Array<{ text: string }>)[0]?.text ?? '';
      const env = JSON.parse(text) as Record<string, string>;
      expect(env.FORWARDED_ONE).toBe('from-host');
      expect(env.SET_HERE).toBe('a=b');
      expect(Object.keys(env).sort()).toEqual(['FORWARDED_ONE', 'HOME', 'LANG', 'PATH', 'SET_HERE']);
      expect(text).not.toContain('must-not-cross');
      expect(stderr()).toContain('withheld, including NOT_FORWARDED_TOKEN');
      expect(stderr()).not.toContain('must-not-cross');
    } finally {
      await client.close();
    }
  });
});
