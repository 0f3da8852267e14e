import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

// A newcomer passes a host folder as a server argument and forgets `--mount`: the server fails
// with ENOENT inside the sandbox. One stderr line must say that the path exists here and which
// `--mount` shows it (read-only), and never offer the home or a credentials folder.
const dir = mkdtempSync(join(tmpdir(), 'mount-hint-e2e-'));
chmodSync(dir, 0o755);
const data = join(dir, 'notes');
mkdirSync(data);
writeFileSync(join(data, 'today.md'), 'remember the milk\n');
chmodSync(join(data, 'today.md'), 0o644);
const code = join(dir, 'server');
mkdirSync(code);
const server = join(code, 'reads-its-folder.cjs');
// Reads the file its argument names; fails the way a real server does when the folder is missing.
writeFileSync(
  server,
  `const { readFileSync } = require('node:fs');
const text = readFileSync(require('node:path').join(process.argv[2], 'today.md'), 'utf8');
process.stderr.write('READ ' + text.trim() + '\\n');`,
);
chmodSync(server, 0o644);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a host path the server needs but cannot see is named with the --mount that shows it', () => {
  it('local: the server fails on the folder, and stderr names --mount <folder>', async () => {
    const result = await spawnBin(['run', '--', process.execPath, server, data]).result;
    expect(result.stderr).toContain('ENOENT');
    expect(result.stderr).toContain(
      `the server used ${data}, which exists on this machine but is not in the sandbox: show it with --mount ${data}`,
    );
    expect(result.stderr.split(`--mount ${data}`).length - 1).toBe(1);
  });

  it('local: with that --mount the server reads the folder, and nothing is suggested', async () => {
    const result = await spawnBin(['run', '--mount', data, '--', process.execPath, server, data]).result;
    expect(result.stderr).toContain('READ remember the milk');
    expect(result.stderr).not.toContain('exists on this machine but is not in the sandbox');
  });

  it('never suggests mounting the home or a folder in it that holds credentials', async () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, '.ssh'), { recursive: true });
    const env = { ...process.env, HOME: home };
    for (const path of [home, join(home, '.ssh')]) {
      const result = await spawnBin(['run', '--', process.execPath, server, path], env).result;
      expect(result.stderr).toContain('ENOENT');
      expect(result.stderr).not.toContain('exists on this machine but is not in the sandbox');
    }
  });

  it('backend none shows the host as it is: no hint', async () => {
    const result = await spawnBin(['run', '--backend', 'none', '--', process.execPath, server, data]).result;
    expect(result.stderr).toContain('READ remember the milk');
    expect(result.stderr).not.toContain('is not in the sandbox');
  });
});
