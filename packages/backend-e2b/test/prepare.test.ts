import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeE2B, startFakeE2B } from '../src/testing/index.js';
import { bridgeSession, collect, fakeBackend } from './helpers.js';

let fake: FakeE2B;
let pkg: string;
// npm must not reach a registry in an offline test: the package is a local directory.
const OFFLINE = { npm_config_offline: 'true', npm_config_update_notifier: 'false' };

beforeAll(async () => {
  fake = await startFakeE2B();
  pkg = mkdtempSync(join(tmpdir(), 'e2b-npx-pkg-'));
  mkdirSync(pkg, { recursive: true });
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({ name: 'tiny-echo-server', version: '1.0.0', bin: { 'tiny-echo-server': 'bin.js' } }),
  );
  // Echoes stdin to stdout, after printing its arguments on stderr.
  writeFileSync(
    join(pkg, 'bin.js'),
    '#!/usr/bin/env node\nprocess.stderr.write(JSON.stringify(process.argv.slice(2)) + "\\n");\nprocess.stdin.pipe(process.stdout);\n',
  );
  chmodSync(join(pkg, 'bin.js'), 0o755);
});
afterAll(async () => {
  await fake.close();
  rmSync(pkg, { recursive: true, force: true });
});

describe('prepare: npx -y installs in the VM first, then runs the binary', () => {
  it('installs into a directory in the VM and returns the installed binary with the arguments', async () => {
    const box = await fakeBackend(fake).create({ sessionId: 'npx', env: OFFLINE, ttlMs: 120_000 });
    try {
      const progress: Buffer[] = [];
      const command = await box.prepare!(['npx', '-y', pkg, '--flag', 'a b'], {
        stderr: (chunk) => progress.push(Buffer.from(chunk)),
      });
      expect(command[0]).toMatch(
        /\/\.mcp-sandbox\/npx\/[0-9a-f]{16}\/node_modules\/\.bin\/tiny-echo-server$/,
      );
      expect(command.slice(1)).toEqual(['--flag', 'a b']);
      // Egress was widened to the registry for the install only, then put back.
      const vm = fake.sandboxes.get(box.id)!;
      expect(vm.networkUpdates).toEqual([
        { allowOut: ['registry.npmjs.org'], denyOut: ['0.0.0.0/0'] },
        { allow_internet_access: false },
      ]);
      const proc = await box.exec(command);
      const out = collect(proc.stdout);
      const err = collect(proc.stderr);
      await proc.write(Buffer.from('ping\n'));
      await proc.closeStdin();
      expect((await out).toString()).toBe('ping\n');
      expect((await err).toString()).toBe('["--flag","a b"]\n');
      expect(await proc.exit).toEqual({ code: 0, signal: null });
    } finally {
      await box.close();
    }
  });

  it('leaves other commands alone', async () => {
    const box = await fakeBackend(fake).create({ sessionId: 'npx-other', env: {}, ttlMs: 60_000 });
    try {
      const stderr = () => {};
      expect(await box.prepare!(['node', 'server.js'], { stderr })).toEqual(['node', 'server.js']);
      expect(await box.prepare!(['npx', 'some-pkg'], { stderr })).toEqual(['npx', 'some-pkg']);
    } finally {
      await box.close();
    }
  });

  it('a failed install is a typed error with the exit code, and the server never starts', async () => {
    const box = await fakeBackend(fake).create({ sessionId: 'npx-fail', env: OFFLINE, ttlMs: 60_000 });
    try {
      const error = await box.prepare!(['npx', '-y', join(pkg, 'does-not-exist')], {
        stderr: () => {},
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'E_E2B_INSTALL' });
      expect(fake.sandboxes.get(box.id)?.networkUpdates.at(-1)).toEqual({ allow_internet_access: false });
    } finally {
      await box.close();
    }
  });

  it('through the bridge, a message sent during the cold start reaches the server', async () => {
    const run = bridgeSession(fakeBackend(fake), ['npx', '-y', pkg], { env: OFFLINE });
    const replies = collect(run.clientOut);
    // Sent at once, long before the install in the VM has finished.
    run.clientIn.write('{"jsonrpc":"2.0","id":1,"method":"first"}\n');
    await expect
      .poll(() => run.trace().some((r) => r.type === 'message' && r.dir === 'server->client'), {
        timeout: 60_000,
      })
      .toBe(true);
    run.clientIn.end();
    const result = await run.session.done;
    run.clientOut.end();
    // The echo server sends the line back first; the bridge then answers the (echoed) request itself.
    expect((await replies).toString().split('\n')[0]).toBe('{"jsonrpc":"2.0","id":1,"method":"first"}');
    expect(result.exitCode).toBe(0);
    expect(run.trace().find((r) => r.type === 'prepared')).toBeDefined();
  });
});
