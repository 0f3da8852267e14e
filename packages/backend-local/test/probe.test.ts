import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendUnavailableError } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import {
  createLocalBackend,
  evaluateLocalProbe,
  type LocalProbeFacts,
  probeLocalSandbox,
} from '../src/index.js';

const healthy: LocalProbeFacts = {
  platform: 'linux',
  arch: 'x64',
  uid: 1000,
  bwrapPath: '/usr/bin/bwrap',
  bwrapVersion: '0.8.0',
  prlimitPath: '/usr/bin/prlimit',
  trial: { ok: true, stderr: '' },
  sysctl: {},
};

function failure(facts: Partial<LocalProbeFacts>): BackendUnavailableError {
  try {
    evaluateLocalProbe({ ...healthy, ...facts });
  } catch (error) {
    expect(error).toBeInstanceOf(BackendUnavailableError);
    return error as BackendUnavailableError;
  }
  throw new Error('the probe accepted a broken machine');
}

describe('probeLocalSandbox: faked machines', () => {
  it('accepts a healthy machine and runs as the host user', () => {
    const info = evaluateLocalProbe(healthy);
    expect(info.runAs).toBeUndefined();
    expect(info.warnings).toEqual([]);
  });

  it('runs as nobody when the host process is root', () => {
    expect(evaluateLocalProbe({ ...healthy, uid: 0 }).runAs).toEqual({ uid: 65534, gid: 65534 });
  });

  it('refuses other platforms and points at e2b', () => {
    const error = failure({ platform: 'darwin' });
    expect(error.code).toBe('E_LOCAL_UNSUPPORTED_PLATFORM');
    expect(error.message).toContain('not yet supported on this platform');
    expect(error.message).toContain('--backend e2b');
  });

  it('refuses a CPU architecture it has no seccomp filter for', () => {
    expect(failure({ arch: 'ia32' }).code).toBe('E_LOCAL_UNSUPPORTED_ARCH');
  });

  it('names the package when bwrap is missing', () => {
    const error = failure({ bwrapPath: undefined, bwrapVersion: undefined, trial: undefined });
    expect(error.code).toBe('E_BWRAP_MISSING');
    expect(error.message).toContain('apt-get install bubblewrap');
  });

  it('refuses a bwrap without --disable-userns', () => {
    const error = failure({ bwrapVersion: '0.7.0', trial: undefined });
    expect(error.code).toBe('E_BWRAP_TOO_OLD');
    expect(error.message).toContain('0.8.0');
  });

  it("names Ubuntu's AppArmor restriction and its profile", () => {
    const error = failure({
      trial: { ok: false, stderr: 'bwrap: setting up uid map: Permission denied\n' },
      sysctl: { apparmorRestrictUnprivilegedUserns: '1' },
    });
    expect(error.code).toBe('E_USERNS_BLOCKED');
    expect(error.message).toContain('kernel.apparmor_restrict_unprivileged_userns');
    expect(error.message).toContain('bwrap-userns-restrict');
  });

  it('names the Debian sysctl', () => {
    const error = failure({
      trial: { ok: false, stderr: 'bwrap: No permissions to creating new namespace\n' },
      sysctl: { unprivilegedUsernsClone: '0' },
    });
    expect(error.code).toBe('E_USERNS_BLOCKED');
    expect(error.message).toContain('sysctl -w kernel.unprivileged_userns_clone=1');
  });

  it('names user.max_user_namespaces', () => {
    const error = failure({
      trial: { ok: false, stderr: 'bwrap: Creating new namespace failed: No space left on device\n' },
      sysctl: { maxUserNamespaces: '0' },
    });
    expect(error.message).toContain('user.max_user_namespaces');
  });

  it('still fails closed on an unknown bwrap failure, quoting it', () => {
    const error = failure({ trial: { ok: false, stderr: 'bwrap: something odd\n' } });
    expect(error.code).toBe('E_BWRAP_FAILED');
    expect(error.message).toContain('something odd');
  });

  it('warns (does not fail) when prlimit is missing', () => {
    const info = evaluateLocalProbe({ ...healthy, prlimitPath: undefined });
    expect(info.warnings.join('\n')).toContain('prlimit');
  });

  it('gathers the rest of the facts when only some are faked', async () => {
    const error = await probeLocalSandbox({ facts: { bwrapPath: undefined } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as BackendUnavailableError).code).toBe('E_BWRAP_MISSING');
  });

  it('makes create() fail with the typed error, never a weaker sandbox', async () => {
    const backend = createLocalBackend({
      probe: () => probeLocalSandbox({ facts: { bwrapVersion: '0.6.2', trial: undefined } }),
    });
    await expect(backend.create({ sessionId: 's', env: {}, ttlMs: 10_000 })).rejects.toMatchObject({
      code: 'E_BWRAP_TOO_OLD',
    });
  });
});

describe('probeLocalSandbox: this machine', () => {
  it('finds a working bubblewrap', async () => {
    const info = await probeLocalSandbox();
    expect(info.bwrapVersion).toMatch(/^\d+\.\d+/);
    expect(info.runAs).toEqual(process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined);
  });
});

describe('the first sandbox is the trial: no probe runs on a start', () => {
  // A bwrap first on PATH that logs how it was called, then runs the real one, or fails as a
  // machine without user namespaces does (before running anything, as bwrap does).
  function wrapperBwrap(mode: 'real' | 'no-userns'): {
    dir: string;
    log: string;
    env: Record<string, string>;
  } {
    const real = execFileSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).trim();
    const dir = mkdtempSync(join(tmpdir(), 'mcp-sandbox-bwrap-log-'));
    const log = join(dir, 'calls');
    const body =
      mode === 'real'
        ? `exec ${real} "$@"`
        : 'case "$1" in --version) echo "bubblewrap 0.9.0";; *) echo "bwrap: setting up uid map: Permission denied" >&2; exit 1;; esac';
    writeFileSync(join(dir, 'bwrap'), `#!/bin/sh\necho "$1" >> ${log}\n${body}\n`, { mode: 0o755 });
    // As root the sandbox runs as nobody, who must run the wrapper and write its log.
    chmodSync(dir, 0o755);
    writeFileSync(log, '');
    chmodSync(log, 0o666);
    return { dir, log, env: { PATH: `${dir}:${process.env.PATH}`, HOME: process.env.HOME ?? '/' } };
  }
  const spec = { sessionId: 's', env: {}, ttlMs: 20_000 };

  it('runs bwrap once per sandbox on a machine that works: no --version, no trial run', async () => {
    const { dir, log, env } = wrapperBwrap('real');
    try {
      const sandbox = await createLocalBackend({ hostEnv: env }).create(spec);
      try {
        const proc = await sandbox.exec(['/bin/sh', '-c', 'echo started']);
        void proc.closeStdin();
        let out = '';
        for await (const chunk of proc.stdout) out += Buffer.from(chunk).toString();
        expect(out.trim()).toBe('started');
        await proc.exit;
      } finally {
        await sandbox.close();
      }
      const calls = readFileSync(log, 'utf8').trim().split('\n');
      expect(calls).not.toContain('--version');
      // The sandbox's own bwrap (one layer, or two with the egress relay), and nothing else.
      expect(calls.length).toBeLessThanOrEqual(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a failed first start runs the probe and fails with its typed error, naming the fix', async () => {
    const { dir, log, env } = wrapperBwrap('no-userns');
    try {
      const sandbox = await createLocalBackend({ hostEnv: env }).create(spec);
      try {
        const error = await sandbox.exec(['/bin/sh', '-c', 'echo started']).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(BackendUnavailableError);
        expect((error as BackendUnavailableError).code).toBe('E_USERNS_BLOCKED');
        expect((error as Error).message).toContain('setting up uid map');
      } finally {
        await sandbox.close();
      }
      // Control: the start really ran this bwrap, then the probe's two runs.
      expect(readFileSync(log, 'utf8')).toContain('--version');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
