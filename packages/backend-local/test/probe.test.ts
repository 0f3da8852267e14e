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
