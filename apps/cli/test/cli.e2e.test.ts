import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FAKE_SERVER, line, spawnBin, stdoutMessages, waitFor } from './helpers.js';

const HELLO_APP = join(
  dirname(createRequire(import.meta.url).resolve('@mcpsandbox/vm-sandbox')),
  '..',
  'examples',
  'hello-app.js',
);
const CUSTOM = fileURLToPath(new URL('./fixtures/custom-backend.mjs', import.meta.url));
const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };

async function pingThrough(args: string[]) {
  const run = spawnBin(['run', ...args]);
  run.child.stdin.write(line(PING));
  await waitFor(() => stdoutMessages(run.stdoutSoFar()).some((m) => m.id === 1));
  run.child.stdin.end();
  return run.result;
}

describe('mcp-sandbox run: setup, custom backends, output discipline', () => {
  it('runs --setup steps in order before the server, with their output on stderr only', async () => {
    const result = await pingThrough([
      '--backend',
      'none',
      '--setup',
      'echo first-step-output',
      '--setup',
      'echo second-step-output >&2',
      '--',
      process.execPath,
      FAKE_SERVER,
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr.indexOf('first-step-output')).toBeLessThan(
      result.stderr.indexOf('second-step-output'),
    );
    expect(result.stdout.toString()).not.toContain('step-output');
    expect(stdoutMessages(result.stdout)).toHaveLength(1);
  });

  it('stops with exit 125 and a clear line when a setup step fails; queued requests get an error', async () => {
    const run = spawnBin([
      'run',
      '--backend',
      'none',
      '--setup',
      'exit 3',
      '--',
      process.execPath,
      FAKE_SERVER,
    ]);
    run.child.stdin.write(line(PING));
    const result = await run.result;
    expect(result.code).toBe(125);
    expect(result.stderr).toContain('setup step 1 (exit 3) exited with code 3');
    expect(stdoutMessages(result.stdout)[0]?.error).toMatchObject({ code: -32000 });
  });

  it('loads a custom backend from a path and from a package name', async () => {
    const byPath = await pingThrough(['--backend', CUSTOM, '--', process.execPath, FAKE_SERVER]);
    expect(byPath.code).toBe(0);
    expect(byPath.stderr).toContain('backend custom, isolation none: a custom backend loaded from a file');
    const byPackage = await pingThrough(['--backend', '@mcpsandbox/backend-fake', '--', 'fake-mcp-server']);
    expect(byPackage.code).toBe(0);
    expect(byPackage.stderr).toContain('backend fake');
  });

  it('--quiet keeps stderr to warnings and errors', async () => {
    const result = await pingThrough(['--backend', 'fake', '--quiet', '--', 'fake-mcp-server']);
    expect(result.stderr).not.toContain('backend fake');
    expect(result.stderr).not.toContain('env:');
  });

  it('--help shows the options, backends and examples, and exits 0', async () => {
    const result = await spawnBin(['run', '--help']).result;
    expect(result.code).toBe(0);
    const text = result.stdout.toString();
    for (const needle of [
      '--env <KEY|KEY=value>',
      '--ttl <duration>',
      '--setup <command>',
      '--trace <file>',
      'Examples:',
      'Backends:',
    ]) {
      expect(text).toContain(needle);
    }
  });

  it('--version prints the version', async () => {
    const result = await spawnBin(['--version']).result;
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it('doctor checks this machine with the backends the binary ships, and exits 0 when local works', async () => {
    const result = await spawnBin(['doctor']).result;
    expect(result.stdout.toString()).toMatch(/✓ backend local \(default\): usable: bubblewrap \d+\.\d+/);
    expect(result.stdout.toString()).toMatch(/backend e2b/);
    expect(result.code).toBe(0);
  });

  // Before its probe was wired, doctor said "backend vm: not usable: not checked".
  it('doctor runs a real trial program in the vm backend, inside the local OS sandbox', async () => {
    const result = await spawnBin(['doctor']).result;
    expect(result.stdout.toString()).toMatch(
      /✓ backend vm: usable: ran a trial program \(\d+ ms\): node:vm context in a locked-down Node child inside the local sandbox/,
    );
  });

  // Before, a flag the backend does not use was dropped in silence (`--template base` on local).
  it('names a flag that does not apply to the chosen backend, and still runs', async () => {
    const run = spawnBin(['run', '--template', 'base', '--', 'cat']);
    run.child.stdin.end('{"jsonrpc":"2.0","method":"ping"}\n');
    const result = await run.result;
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(
      '--template does not apply to backend local: ignored (it applies to: e2b)',
    );
    expect(result.stdout.toString()).toBe('{"jsonrpc":"2.0","method":"ping"}\n');
  });

  it('names --mount and --allow-net as ignored on the vm backend, whose worker gets neither', async () => {
    const result = await spawnBin([
      'inspect',
      '--backend',
      'vm',
      '--mount',
      '.',
      '--allow-net',
      'example.com',
      '--',
      HELLO_APP,
    ]).result;
    expect(result.stderr).toContain(
      '--mount does not apply to backend vm: ignored (it applies to: local, srt, e2b)',
    );
    expect(result.stderr).toContain('--allow-net does not apply to backend vm: ignored');
    expect(result.stderr).not.toContain('--template');
  });
});
