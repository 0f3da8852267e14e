import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeE2B, startFakeE2B } from '../src/testing/index.js';
import { bridgeSession, collect, fakeBackend } from './helpers.js';

// A hostile package: its install script reports what it can see, starts a daemon that would keep
// running, and prints escape sequences and a secret it got hold of. Packed as a tarball, so npm
// runs its install script as it would for one from the registry (offline: nothing to fetch).
const GRANTED = 'granted-token-value-123456';
// npm shows a script's output when it fails: escape sequences and a secret the script got hold of.
const FAILING_INSTALL_JS = `
process.stderr.write('\\u001b]0;pwned\\u0007\\u001b[2JINSTALL-SAYS ${GRANTED}\\n');
process.exit(1);
`;
const INSTALL_JS = `
const fs = require('fs'), path = require('path'), { spawn } = require('child_process');
const home = process.env.HOME;
fs.writeFileSync(path.join(home, 'install-report.json'), JSON.stringify({
  env: process.env,
  mountVisible: fs.existsSync(path.join(home, 'data', 'secret.txt')),
}));
const daemon = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
fs.writeFileSync(path.join(home, 'install-daemon.pid'), String(daemon.pid));
daemon.unref();
`;

let fake: FakeE2B;
let work: string;
let tarball: string;
let failing: string;
let mountDir: string;

beforeAll(async () => {
  fake = await startFakeE2B();
  work = mkdtempSync(join(tmpdir(), 'e2b-hostile-pkg-'));
  const pkg = join(work, 'pkg');
  mkdirSync(pkg);
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: 'hostile-install',
      version: '1.0.0',
      bin: { 'hostile-install': 'bin.js' },
      scripts: { install: 'node install.js' },
    }),
  );
  writeFileSync(join(pkg, 'install.js'), INSTALL_JS);
  writeFileSync(
    join(pkg, 'bin.js'),
    '#!/usr/bin/env node\nprocess.stdout.write(JSON.stringify({ token: process.env.GRANTED_TOKEN ?? null }) + "\\n");\n',
  );
  chmodSync(join(pkg, 'bin.js'), 0o755);
  execFileSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: pkg, stdio: 'ignore' });
  tarball = join(work, 'hostile-install-1.0.0.tgz');
  writeFileSync(join(pkg, 'install.js'), FAILING_INSTALL_JS);
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: 'hostile-fail',
      version: '1.0.0',
      bin: 'bin.js',
      scripts: { install: 'node install.js' },
    }),
  );
  execFileSync('npm', ['pack', '--silent', '--pack-destination', work], { cwd: pkg, stdio: 'ignore' });
  failing = join(work, 'hostile-fail-1.0.0.tgz');
  mountDir = join(work, 'mount');
  mkdirSync(mountDir);
  writeFileSync(join(mountDir, 'secret.txt'), 'MOUNTED-SECRET');
});
afterAll(async () => {
  fake.onNetworkUpdate(undefined);
  await fake.close();
  rmSync(work, { recursive: true, force: true });
});

/** Alive and not a zombie waiting to be reaped. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('the npx -y install gets the registry and nothing else', () => {
  // Fails before the install ran with an empty environment, before the mounts, in a process
  // group killed before the rules were restored: it saw GRANTED_TOKEN and the mounted secret, and
  // its daemon was still running when the session's rules came back.
  it('sees no granted variable and no mount, and what it starts is dead before the rules come back', {
    timeout: 120_000,
  }, async () => {
    const atRestore: boolean[] = [];
    fake.onNetworkUpdate((box, body) => {
      if ((body as { allow_internet_access?: boolean }).allow_internet_access !== false) return;
      const pid = Number(readFileSync(join(box.home, 'install-daemon.pid'), 'utf8'));
      atRestore.push(alive(pid));
    });
    const box = await fakeBackend(fake).create({
      sessionId: 'npx-hostile',
      env: { GRANTED_TOKEN: GRANTED },
      ttlMs: 120_000,
      mounts: [{ hostPath: mountDir, sandboxPath: '/home/user/data', mode: 'ro' }],
    });
    try {
      const vm = fake.sandboxes.get(box.id)!;
      const command = await box.prepare!(['npx', '-y', tarball], { stderr: () => {} });
      // Control: the install script did run, and wrote its report in the VM.
      const report = JSON.parse(readFileSync(join(vm.home, 'install-report.json'), 'utf8')) as {
        env: Record<string, string>;
        mountVisible: boolean;
      };
      expect(report.env.HOME).toBe(vm.home);
      expect(JSON.stringify(report.env)).not.toContain(GRANTED);
      expect(report.mountVisible).toBe(false);
      expect(atRestore).toEqual([false]);
      // The install ran under the registry grant only; the session's rules came back after it.
      expect(vm.networkUpdates).toEqual([
        { allowOut: ['registry.npmjs.org'], denyOut: ['0.0.0.0/0'] },
        { allow_internet_access: false },
      ]);
      // Control: the server itself does get the granted variable and the mount.
      expect(readFileSync(join(vm.home, 'data', 'secret.txt'), 'utf8')).toBe('MOUNTED-SECRET');
      const server = await box.exec(command);
      const out = collect(server.stdout);
      expect(await server.exit).toMatchObject({ code: 0 });
      expect(JSON.parse((await out).toString())).toEqual({ token: GRANTED });
    } finally {
      fake.onNetworkUpdate(undefined);
      // Should the test fail, the daemon must not outlive it (the fake runs it on this machine).
      const pidFile = join(fake.sandboxes.get(box.id)!.home, 'install-daemon.pid');
      const daemon = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0;
      if (daemon > 1 && alive(daemon)) process.kill(daemon, 'SIGKILL');
      await box.close();
    }
  });

  // Fails before install output went through the relay: npm's output reached stderr with its
  // escape sequences and the secret, and the trace had none of it.
  it("relays the install's output without control characters, with secrets redacted, into the trace", {
    timeout: 120_000,
  }, async () => {
    const run = bridgeSession(fakeBackend(fake), ['npx', '-y', failing], { env: { GRANTED_TOKEN: GRANTED } });
    const result = await run.session.done;
    run.clientIn.end();
    expect(result).toMatchObject({ reason: 'sandbox-failure', exitCode: 125 });
    expect(result.error?.code).toBe('E_E2B_INSTALL');
    const stderr = run.stderr();
    // Control: the script's output did reach the host, through npm.
    expect(stderr).toContain('INSTALL-SAYS');
    expect(stderr).not.toContain('\u001b');
    expect(stderr).not.toContain('\u0007');
    expect(stderr).not.toContain(GRANTED);
    const lines = run
      .trace()
      .filter((r) => r.type === 'sandbox.install-output')
      .map((r) => String(r.text));
    expect(lines.some((line) => line.includes('INSTALL-SAYS'))).toBe(true);
    expect(lines.join('\n')).not.toContain(GRANTED);
  });
});
