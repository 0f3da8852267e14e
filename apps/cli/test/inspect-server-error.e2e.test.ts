import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

// A server that needs a plain (not secret-looking) variable, as the Elasticsearch server needs
// ES_URL, and exits with its own error when it is missing. `inspect` must show how it ended and
// its own last lines before the generic "did not answer as an MCP server", and name the --env
// flag for the variable the host has.
const dir = mkdtempSync(join(tmpdir(), 'inspect-server-error-'));
chmodSync(dir, 0o755);
const server = join(dir, 'needs-es-url.cjs');
writeFileSync(
  server,
  `if (!process.env.ES_URL) {
  process.stderr.write('Error: ES_URL is required: set it to your cluster address\\n');
  process.exit(3);
}
process.stderr.write('connected to ' + process.env.ES_URL + '\\n');`,
);
chmodSync(server, 0o644);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('inspect on a server that exits with its own error', () => {
  it('shows its exit code and last stderr lines before the generic line, and the withheld variable', async () => {
    const env = { ...process.env, ES_URL: 'http://127.0.0.1:9200' };
    const result = await spawnBin(['inspect', '--', process.execPath, server], env).result;
    expect(result.code).toBe(1);
    const own = result.stderr.indexOf(
      'the server exited with code 3 before it answered; its last lines on stderr:\n  [sandbox] Error: ES_URL is required',
    );
    const generic = result.stderr.indexOf('this program did not answer as an MCP server');
    expect(own, result.stderr).toBeGreaterThan(-1);
    expect(generic).toBeGreaterThan(own);
    expect(result.stderr).toContain(
      'the server asked for ES_URL, which was withheld: pass it with --env ES_URL',
    );
  });

  it('a program stopped after --timeout is not said to have exited on its own', async () => {
    const result = await spawnBin(['inspect', '--timeout', '1s', '--', 'sleep', '60']).result;
    expect(result.code).toBe(1);
    expect(result.stderr).not.toContain('before it answered');
  });
});
