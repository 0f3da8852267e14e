import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connect } from './helpers.js';

const require = createRequire(import.meta.url);
const HELLO_APP = join(dirname(require.resolve('@mcpsandbox/vm-sandbox')), '..', 'examples', 'hello-app.js');

describe('mcp-sandbox run --backend vm', () => {
  it('serves an untrusted JavaScript app to the real SDK client, with --env as data', async () => {
    const { client, stderr } = await connect(['--backend', 'vm', '--env', 'GREETING=Howdy', '--', HELLO_APP]);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['add', 'fail', 'hello']);
      const hello = await client.callTool({ name: 'hello', arguments: { name: 'Ada' } });
      expect(JSON.stringify(hello.content)).toContain('Howdy, Ada!');
      const failed = await client.callTool({ name: 'fail', arguments: {} });
      expect(failed.isError).toBe(true);
    } finally {
      await client.close();
    }
    // On this machine the worker runs inside the local OS sandbox, and the start-up line says so.
    expect(stderr()).toContain(
      'backend vm, isolation language: node:vm context in a locked-down Node child inside the local sandbox',
    );
  });
});
