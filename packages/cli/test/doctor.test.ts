import { execFileSync } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import { BackendUnavailableError, type SandboxBackend } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import {
  type BackendRegistry,
  backendProbeFrom,
  type CliOptions,
  type DoctorHost,
  type DoctorSetup,
  type ExecResult,
  runCli,
} from '../src/index.js';

type Program = (args: readonly string[]) => ExecResult;

const ok = (stdout: string, stderr = ''): ExecResult => ({ started: true, code: 0, stdout, stderr });
const failed = (code: number, stderr: string): ExecResult => ({ started: true, code, stdout: '', stderr });

interface FakeMachine {
  platform?: string;
  nodeVersion?: string;
  env?: Record<string, string | undefined>;
  programs?: Record<string, Program | undefined>;
  files?: Record<string, string | undefined>;
  folders?: Record<string, { bytes: number; entries: number; partial?: boolean } | undefined>;
}

/** A healthy Linux box; each test breaks one thing. */
function fakeHost(machine: FakeMachine = {}): DoctorHost & { calls: string[] } {
  const programs: Record<string, Program | undefined> = {
    node: () => ok('v20.19.1\n'),
    bwrap: (args) => (args[0] === '--version' ? ok('bubblewrap 0.9.0\n') : ok('')),
    npm: () => ok('/home/u/.npm\n'),
    ...machine.programs,
  };
  const files: Record<string, string | undefined> = {
    '/proc/self/status': 'Name:\tnode\nSeccomp:\t0\nSeccomp_filters:\t0\n',
    '/proc/sys/kernel/seccomp/actions_avail':
      'kill_process kill_thread trap errno user_notif trace log allow\n',
    ...machine.files,
  };
  const folders: Record<string, { bytes: number; entries: number; partial?: boolean } | undefined> = {
    '/home/u/.npm/_npx': { bytes: 5 * 2 ** 20, entries: 3 },
    ...machine.folders,
  };
  const calls: string[] = [];
  return {
    platform: machine.platform ?? 'linux',
    ...(machine.nodeVersion === undefined
      ? { nodeVersion: '20.19.1' }
      : { nodeVersion: machine.nodeVersion }),
    env: machine.env ?? { HOME: '/home/u', PATH: '/usr/bin' },
    calls,
    exec: async (file, args) => {
      calls.push([file, ...args].join(' '));
      const program = programs[file];
      return program
        ? program(args)
        : { started: false, code: null, stdout: '', stderr: `spawn ${file} ENOENT` };
    },
    readText: async (path) => files[path],
    folderSize: async (path) => folders[path],
  };
}

function backend(id: string, isolation: SandboxBackend['isolation']): BackendRegistry[string] {
  return {
    summary: id,
    create: () => ({
      specificationVersion: 'sandbox-backend-v1',
      id,
      isolation,
      create: () => Promise.reject(new Error('not in this test')),
    }),
  };
}

const REGISTRY: BackendRegistry = {
  local: backend('local', 'os'),
  e2b: backend('e2b', 'microvm'),
  none: backend('none', 'none'),
};

async function doctor(
  setup: DoctorSetup | (() => Promise<DoctorSetup>) | undefined,
  defaultBackend = 'local',
  backends: BackendRegistry = REGISTRY,
  env: Record<string, string | undefined> = {},
) {
  let stdout = '';
  let stderr = '';
  const options: CliOptions = {
    backends,
    defaultBackend,
    version: '1.2.3',
    io: {
      stdin: new PassThrough(),
      stdout: new Writable({
        write(c, _e, d) {
          stdout += c.toString();
          d();
        },
      }),
      stderr: new Writable({
        write(c, _e, d) {
          stderr += c.toString();
          d();
        },
      }),
      env,
      cwd: '/',
    },
    ...(setup ? { doctor: setup } : {}),
  };
  const code = await runCli(['doctor'], options);
  const lines = stdout.trimEnd().split('\n');
  const line = (title: string) =>
    lines.find((l) => l.slice(2).startsWith(`${title}:`)) ?? `(no ${title} line)`;
  return { code, stdout, stderr, lines, line };
}

describe('doctor on a faked machine', () => {
  it('a healthy Linux box: every line ✓ or ·, exit 0', async () => {
    const r = await doctor({
      host: fakeHost({ env: { HOME: '/home/u', E2B_API_KEY: 'e2b_0123456789abcdef' } }),
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.lines.every((l) => /^[✓·] /.test(l))).toBe(true);
    expect(r.line('Node.js')).toBe('✓ Node.js: 20.19.1');
    expect(r.line('bubblewrap')).toBe('✓ bubblewrap: bwrap 0.9.0');
    expect(r.line('npx cache')).toBe('· npx cache: /home/u/.npm/_npx (5.0 MiB, 3 package sets)');
    expect(r.line('backend local (default)')).toBe(
      '✓ backend local (default): usable: bubblewrap 0.9.0, user namespaces work',
    );
    expect(r.line('backend none')).toContain('✓ backend none: usable');
    expect(r.line('backend e2b')).toContain('✓ backend e2b: usable: E2B_API_KEY is set');
  });

  it('takes its setup from a function, called only when doctor runs', async () => {
    const setup = { host: fakeHost({ env: { HOME: '/home/u' } }) };
    let calls = 0;
    const lazy = await doctor(async () => {
      calls++;
      return setup;
    });
    expect(calls).toBe(1);
    const { code, stdout, stderr } = await doctor(setup);
    expect({ code: lazy.code, stdout: lazy.stdout, stderr: lazy.stderr }).toEqual({ code, stdout, stderr });
    expect(lazy.line('backend local (default)')).toMatch(/^✓ backend local \(default\): usable/);
  });

  it('runs the real namespace probe, not just --version', async () => {
    const host = fakeHost();
    await doctor({ host });
    expect(host.calls).toContain(
      'bwrap --unshare-user --disable-userns --unshare-pid --unshare-ipc --unshare-uts --unshare-net --die-with-parent --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp -- true',
    );
  });

  it('Node.js too old', async () => {
    const r = await doctor({ host: fakeHost({ nodeVersion: '18.20.4' }) });
    expect(r.line('Node.js')).toMatch(
      /^✗ Node\.js: 18\.20\.4 is too old \(need ≥ 20\.19\.0\) — fix: install Node\.js/,
    );
  });

  it('the node on PATH (what clients run) too old, or missing', async () => {
    const old = await doctor({ host: fakeHost({ programs: { node: () => ok('v18.19.0\n') } }) });
    expect(old.line('Node.js')).toMatch(/^✗ Node\.js: the node on PATH is 18\.19\.0/);
    const missing = await doctor({ host: fakeHost({ programs: { node: undefined } }) });
    expect(missing.line('Node.js')).toMatch(/^! Node\.js: 20\.19\.1 runs mcp-sandbox, but no "node" on PATH/);
  });

  it('bubblewrap missing: the fix names the package, local is not usable, exit 1', async () => {
    const r = await doctor({ host: fakeHost({ programs: { bwrap: undefined } }) });
    expect(r.code).toBe(1);
    expect(r.line('bubblewrap')).toMatch(
      /^✗ bubblewrap: bwrap is not installed — fix: sudo apt install bubblewrap/,
    );
    expect(r.line('user namespaces')).toMatch(/^✗ user namespaces: not checked/);
    expect(r.line('backend local (default)')).toMatch(
      /^✗ backend local \(default\): not usable: bwrap is not installed/,
    );
  });

  it('bubblewrap too old', async () => {
    const r = await doctor({
      host: fakeHost({
        programs: { bwrap: (a) => (a[0] === '--version' ? ok('bubblewrap 0.7.0\n') : ok('')) },
      }),
    });
    expect(r.code).toBe(1);
    expect(r.line('bubblewrap')).toMatch(/^✗ bubblewrap: bwrap 0\.7\.0 is older than 0\.8\.0 — fix: upgrade/);
  });

  const blocked = (stderr: string) => ({
    bwrap: (a: readonly string[]) => (a[0] === '--version' ? ok('bubblewrap 0.9.0\n') : failed(1, stderr)),
  });

  it("user namespaces blocked by Ubuntu 24.04's AppArmor restriction: names the sysctl and the profile fix", async () => {
    const r = await doctor({
      host: fakeHost({
        programs: blocked('bwrap: setting up uid map: Permission denied\n'),
        files: { '/proc/sys/kernel/apparmor_restrict_unprivileged_userns': '1\n' },
      }),
    });
    expect(r.code).toBe(1);
    const line = r.line('user namespaces');
    expect(line).toMatch(
      /^✗ user namespaces: blocked by AppArmor \(kernel\.apparmor_restrict_unprivileged_userns=1/,
    );
    expect(line).toContain('setting up uid map: Permission denied');
    expect(line).toContain('/etc/apparmor.d/bwrap');
    expect(line).toContain('userns,');
    expect(line).toContain('sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0');
    expect(r.line('backend local (default)')).toMatch(
      /^✗ backend local \(default\): not usable: user namespaces: blocked by AppArmor/,
    );
  });

  it('user namespaces disabled by the Debian switch, or by max_user_namespaces=0', async () => {
    const debian = await doctor({
      host: fakeHost({
        programs: blocked('bwrap: No permissions to creating new namespace\n'),
        files: { '/proc/sys/kernel/unprivileged_userns_clone': '0\n' },
      }),
    });
    expect(debian.line('user namespaces')).toContain(
      'fix: sudo sysctl -w kernel.unprivileged_userns_clone=1',
    );
    const max = await doctor({
      host: fakeHost({
        programs: blocked('bwrap: Creating new namespace failed: No space left on device\n'),
        files: { '/proc/sys/user/max_user_namespaces': '0\n' },
      }),
    });
    expect(max.line('user namespaces')).toContain('fix: sudo sysctl -w user.max_user_namespaces=15000');
    expect(max.code).toBe(1);
  });

  it('an unexplained sandbox failure shows what bwrap said', async () => {
    const r = await doctor({
      host: fakeHost({
        programs: blocked("bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n"),
      }),
    });
    expect(r.line('user namespaces')).toContain("bwrap could not create a sandbox: bwrap: Can't mount proc");
    expect(r.code).toBe(1);
  });

  it('no seccomp: a warning, the backend still works', async () => {
    const r = await doctor({
      host: fakeHost({
        files: { '/proc/self/status': 'Name:\tnode\n', '/proc/sys/kernel/seccomp/actions_avail': undefined },
      }),
    });
    expect(r.line('seccomp')).toMatch(/^! seccomp: no seccomp filters in this kernel/);
    expect(r.code).toBe(0);
  });

  it('cache locations: npm_config_cache wins, empty caches say so; uv from XDG_CACHE_HOME', async () => {
    const r = await doctor({
      host: fakeHost({
        env: { HOME: '/home/u', npm_config_cache: '/srv/npm', XDG_CACHE_HOME: '/srv/cache' },
        folders: { '/srv/cache/uv': { bytes: 1536, entries: 2 } },
      }),
    });
    expect(r.line('npx cache')).toBe('· npx cache: /srv/npm/_npx (empty: nothing downloaded yet)');
    expect(r.line('uvx cache')).toBe('· uvx cache: /srv/cache/uv (1.5 KiB, 2 entries)');
  });

  it('a cache too large to count in full says its size is a lower bound', async () => {
    const r = await doctor({
      host: fakeHost({
        env: { HOME: '/home/u', XDG_CACHE_HOME: '/srv/cache' },
        folders: { '/srv/cache/uv': { bytes: 3 * 1024 ** 3, entries: 9, partial: true } },
      }),
    });
    expect(r.line('uvx cache')).toBe(
      '· uvx cache: /srv/cache/uv (at least 3.0 GiB: too many files to count them all, 9 entries)',
    );
  });

  it('E2B_API_KEY: presence only, never the value', async () => {
    const secret = 'e2b_supersecretvalue_4242';
    const set = await doctor({ host: fakeHost({ env: { HOME: '/home/u', E2B_API_KEY: secret } }) });
    expect(set.line('E2B_API_KEY')).toBe('✓ E2B_API_KEY: set (its value is not shown)');
    expect(set.stdout).not.toContain(secret);
    expect(set.stdout).not.toContain('supersecret');
    const unset = await doctor({ host: fakeHost() }, 'e2b');
    expect(unset.line('E2B_API_KEY')).toMatch(/^✗ E2B_API_KEY: not set: .* — fix: export E2B_API_KEY=/);
    expect(unset.line('backend e2b (default)')).toMatch(
      /^✗ backend e2b \(default\): not usable: E2B_API_KEY is not set/,
    );
    expect(unset.code).toBe(1);
  });

  it('secrets: when to use --secret and when --env, naming known tokens set here by name, never a value', async () => {
    const value = 'ghp_doctorsecretvalue0123456789abcdef';
    const r = await doctor({
      host: fakeHost({ env: { HOME: '/home/u', GITHUB_PERSONAL_ACCESS_TOKEN: value, MY_TOKEN: 'x' } }),
    });
    expect(r.line('secrets')).toBe(
      '· secrets: --secret NAME@host (backend local) for a token a server sends over HTTPS to one API: the sandbox holds a stand-in; ' +
        '--env NAME for anything else (other protocols, pinned certificates, mTLS, other backends); ' +
        'set here: --secret GITHUB_PERSONAL_ACCESS_TOKEN@api.github.com',
    );
    expect(r.stdout).not.toContain(value);
    expect(r.stdout).not.toContain('MY_TOKEN');
    const none = await doctor({ host: fakeHost() });
    expect(none.line('secrets')).not.toContain('set here');
  });

  it('on a Mac the local backend is not usable; a default that isolates nothing still works', async () => {
    const mac = await doctor({ host: fakeHost({ platform: 'darwin' }) });
    expect(mac.line('bubblewrap')).toBe('· bubblewrap: not used on darwin: the local backend needs Linux');
    expect(mac.line('backend local (default)')).toMatch(/^✗ backend local \(default\): not usable/);
    expect(mac.code).toBe(1);
    const none = await doctor({ host: fakeHost({ platform: 'darwin' }) }, 'none');
    expect(none.code).toBe(0);
  });

  it('injected probes replace the defaults; a probe that throws means not usable', async () => {
    const host = fakeHost({ programs: { bwrap: undefined } });
    const good = await doctor({
      host,
      backendProbes: { local: async () => ({ usable: true, summary: 'probeLocalSandbox says yes' }) },
    });
    expect(good.line('backend local (default)')).toBe(
      '✓ backend local (default): usable: probeLocalSandbox says yes',
    );
    expect(good.code).toBe(0);
    const broken = await doctor({
      host,
      backendProbes: {
        local: async () => {
          throw new Error('boom');
        },
      },
    });
    expect(broken.line('backend local (default)')).toBe(
      '✗ backend local (default): not usable: its probe failed: boom',
    );
    expect(broken.code).toBe(1);
  });

  it("backendProbeFrom adapts a backend package's own probe: resolves = usable, a SandboxError = its message", async () => {
    const host = fakeHost();
    const yes = await doctor({
      host,
      backendProbes: {
        local: backendProbeFrom(
          async () => ({ bwrapVersion: '0.9.0' }),
          (i) => `bubblewrap ${i.bwrapVersion}`,
        ),
      },
    });
    expect(yes.line('backend local (default)')).toBe('✓ backend local (default): usable: bubblewrap 0.9.0');
    const no = await doctor({
      host,
      backendProbes: {
        local: backendProbeFrom(async () => {
          throw new BackendUnavailableError('bubblewrap (bwrap) is not installed; install it');
        }),
      },
    });
    expect(no.line('backend local (default)')).toBe(
      '✗ backend local (default): not usable: bubblewrap (bwrap) is not installed; install it',
    );
    expect(no.code).toBe(1);
  });

  it('a sandboxing backend nobody can probe is not claimed to work', async () => {
    const r = await doctor({ host: fakeHost() }, 'custom', { custom: backend('custom', 'os') });
    expect(r.line('backend custom (default)')).toMatch(
      /not usable: not checked: this build of mcp-sandbox wires no probe/,
    );
    expect(r.code).toBe(1);
  });

  it('custom checks replace the standard ones; a check that throws is a ✗ line, not a crash', async () => {
    const r = await doctor(
      {
        host: fakeHost(),
        checks: [
          { id: 'mine', run: async () => ({ status: 'ok', title: 'mine', summary: 'fine' }) },
          {
            id: 'flaky',
            run: async () => {
              throw new Error('kaput');
            },
          },
        ],
      },
      'none',
    );
    expect(r.lines.slice(0, 2)).toEqual(['✓ mine: fine', '✗ flaky: the check itself failed: kaput']);
    expect(r.code).toBe(0);
  });
});

function which(program: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('doctor on this machine (the real host, nothing injected)', () => {
  it('reports real facts, and exits 0 exactly when the local backend line says usable', async () => {
    const r = await doctor(undefined, 'local', REGISTRY, {
      ...process.env,
      E2B_API_KEY: 'real-run-secret-xyz',
    });
    expect(r.stderr).toBe('');
    expect(r.lines.every((l) => /^[✓✗!·] /.test(l))).toBe(true);
    expect(r.stdout).not.toContain('real-run-secret-xyz');
    // The node on PATH is checked (the running one is not injected here).
    const pathNode = execFileSync('node', ['--version']).toString().trim().slice(1);
    expect(r.line('Node.js')).toContain(pathNode);
    const local = r.line('backend local (default)');
    expect(r.code).toBe(local.startsWith('✓') ? 0 : 1);
    if (process.platform === 'linux' && which('bwrap')) {
      const version = /(\d+\.\d+\.\d+)/.exec(execFileSync('bwrap', ['--version']).toString())?.[1];
      expect(r.line('bubblewrap')).toBe(`✓ bubblewrap: bwrap ${version}`);
    }
    expect(r.line('E2B_API_KEY')).toBe('✓ E2B_API_KEY: set (its value is not shown)');
  });
});
