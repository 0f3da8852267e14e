import { posix, win32 } from 'node:path';
import { isSandboxError } from '@mcpsandbox/core';
import type { InstallCacheView } from '../options.js';
import { parseWslList } from '../wsl.js';
import { type FoundUv, pythonCheck, uvCacheDir, uvCheck, uvLocator } from './python.js';
import { secretsCheck } from './secrets-check.js';
import type { BackendProbe, BackendStatus, CheckResult, DoctorCheck, DoctorHost } from './types.js';

/** mcp-sandbox's own floor (package.json engines). */
export const MIN_NODE = '20.19.0';
/** The oldest bubblewrap the local backend accepts: 0.8.0 added --disable-userns, which it relies on. */
export const MIN_BUBBLEWRAP = '0.8.0';

/** The namespaces and mounts an OS sandbox needs, tried for real with `true` inside. */
export const USERNS_PROBE_ARGS = [
  '--unshare-user',
  '--disable-userns',
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-uts',
  '--unshare-net',
  '--die-with-parent',
  '--ro-bind',
  '/',
  '/',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  '--tmpfs',
  '/tmp',
  '--',
  'true',
] as const;

export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const pb = b.split('.').map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function versionIn(text: string): string | undefined {
  return /(\d+\.\d+(?:\.\d+)?)/.exec(text)?.[1];
}

function check(id: string, run: () => Promise<CheckResult>): DoctorCheck {
  return { id, run };
}

export function nodeCheck(host: DoctorHost): DoctorCheck {
  return check('node', async () => {
    const running = host.nodeVersion;
    const onPath = await host.exec('node', ['--version']);
    const pathVersion = onPath.started ? versionIn(onPath.stdout) : undefined;
    const fix = `install Node.js ${MIN_NODE} or later (https://nodejs.org), and make it the "node" on your PATH`;
    if (running && compareVersions(running, MIN_NODE) < 0) {
      return { status: 'fail', title: 'Node.js', summary: `${running} is too old (need ≥ ${MIN_NODE})`, fix };
    }
    if (!pathVersion) {
      return {
        status: running ? 'warn' : 'fail',
        title: 'Node.js',
        summary: `${running ? `${running} runs mcp-sandbox, but ` : ''}no "node" on PATH: clients cannot start "npx -y mcp-sandbox"`,
        fix,
      };
    }
    if (compareVersions(pathVersion, MIN_NODE) < 0) {
      return {
        status: 'fail',
        title: 'Node.js',
        summary: `the node on PATH is ${pathVersion} (need ≥ ${MIN_NODE}); clients start mcp-sandbox with it`,
        fix,
      };
    }
    const same = !running || running === pathVersion;
    return {
      status: 'ok',
      title: 'Node.js',
      summary: same ? `${pathVersion}` : `${running} (running), ${pathVersion} on PATH`,
    };
  });
}

interface Bubblewrap {
  readonly version?: string;
  readonly result: CheckResult;
}

async function probeBubblewrap(host: DoctorHost): Promise<Bubblewrap> {
  if (host.platform !== 'linux') {
    return {
      result: {
        status: 'info',
        title: 'bubblewrap',
        summary: `not used on ${host.platform}: the local backend needs Linux`,
      },
    };
  }
  const run = await host.exec('bwrap', ['--version']);
  if (!run.started) {
    return {
      result: {
        status: 'fail',
        title: 'bubblewrap',
        summary: 'bwrap is not installed',
        fix: 'sudo apt install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap (Fedora), sudo pacman -S bubblewrap (Arch)',
      },
    };
  }
  const version = versionIn(run.stdout + run.stderr);
  if (!version || compareVersions(version, MIN_BUBBLEWRAP) < 0) {
    return {
      ...(version ? { version } : {}),
      result: {
        status: 'fail',
        title: 'bubblewrap',
        summary: `bwrap ${version ?? '(unknown version)'} is older than ${MIN_BUBBLEWRAP}`,
        fix: `upgrade bubblewrap to ${MIN_BUBBLEWRAP} or later`,
      },
    };
  }
  return { version, result: { status: 'ok', title: 'bubblewrap', summary: `bwrap ${version}` } };
}

export function bubblewrapCheck(host: DoctorHost): DoctorCheck {
  return check('bubblewrap', async () => (await probeBubblewrap(host)).result);
}

const APPARMOR_SYSCTL = '/proc/sys/kernel/apparmor_restrict_unprivileged_userns';
const DEBIAN_SYSCTL = '/proc/sys/kernel/unprivileged_userns_clone';
const MAX_USERNS = '/proc/sys/user/max_user_namespaces';

/** Why namespaces fail, from the kernel's switches, with the fix that names the switch. */
async function explainUsernsFailure(host: DoctorHost, stderr: string): Promise<CheckResult> {
  const firstLine = stderr.trim().split('\n')[0] ?? '';
  const title = 'user namespaces';
  const read = async (path: string) => (await host.readText(path))?.trim();
  if ((await read(APPARMOR_SYSCTL)) === '1') {
    return {
      status: 'fail',
      title,
      summary: `blocked by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1, as on Ubuntu 24.04): ${firstLine}`,
      fix:
        'allow bwrap with an AppArmor profile: write "abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }" to /etc/apparmor.d/bwrap and run sudo apparmor_parser -r /etc/apparmor.d/bwrap; ' +
        'or lift the restriction for everything: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (persist it in /etc/sysctl.d/)',
    };
  }
  if ((await read(DEBIAN_SYSCTL)) === '0') {
    return {
      status: 'fail',
      title,
      summary: `disabled (kernel.unprivileged_userns_clone=0): ${firstLine}`,
      fix: 'sudo sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/)',
    };
  }
  if ((await read(MAX_USERNS)) === '0') {
    return {
      status: 'fail',
      title,
      summary: `disabled (user.max_user_namespaces=0): ${firstLine}`,
      fix: 'sudo sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/)',
    };
  }
  return {
    status: 'fail',
    title,
    summary: `bwrap could not create a sandbox: ${firstLine || 'no error message'}`,
    fix: 'inside a container, run it with user namespaces allowed (e.g. Docker --security-opt seccomp=unconfined --security-opt apparmor=unconfined), or run mcp-sandbox on the host',
  };
}

async function probeUserns(host: DoctorHost): Promise<CheckResult> {
  if (host.platform !== 'linux') {
    return { status: 'info', title: 'user namespaces', summary: `not used on ${host.platform}` };
  }
  const run = await host.exec('bwrap', USERNS_PROBE_ARGS);
  if (!run.started) {
    return {
      status: 'fail',
      title: 'user namespaces',
      summary: 'not checked: bwrap is missing',
      fix: 'install bubblewrap first',
    };
  }
  if (run.code === 0) {
    return {
      status: 'ok',
      title: 'user namespaces',
      summary: 'bwrap created user, pid, ipc, uts and net namespaces with a read-only root',
    };
  }
  return explainUsernsFailure(host, run.stderr);
}

export function userNamespaceCheck(host: DoctorHost): DoctorCheck {
  return check('userns', () => probeUserns(host));
}

export function seccompCheck(host: DoctorHost): DoctorCheck {
  return check('seccomp', async () => {
    if (host.platform !== 'linux') {
      return { status: 'info', title: 'seccomp', summary: `not used on ${host.platform}` };
    }
    const status = await host.readText('/proc/self/status');
    const actions = (await host.readText('/proc/sys/kernel/seccomp/actions_avail'))?.trim();
    if (!status?.includes('Seccomp:') || !actions) {
      return {
        status: 'warn',
        title: 'seccomp',
        summary: 'no seccomp filters in this kernel: sandboxes run without a system-call filter',
        fix: 'use a kernel built with CONFIG_SECCOMP_FILTER (every mainstream distribution kernel is)',
      };
    }
    return {
      status: 'ok',
      title: 'seccomp',
      summary: `filters available (${actions.split(/\s+/).length} actions)`,
    };
  });
}

function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

function pathApi(host: DoctorHost) {
  return host.platform === 'win32' ? win32 : posix;
}

function homeOf(host: DoctorHost): string {
  return (host.platform === 'win32' ? (host.env.USERPROFILE ?? host.env.HOME) : host.env.HOME) ?? '';
}

async function cacheLine(host: DoctorHost, title: string, dir: string, unit: string): Promise<CheckResult> {
  const size = await host.folderSize(dir);
  if (!size) return { status: 'info', title, summary: `${dir} (empty: nothing downloaded yet)` };
  const bytes = size.partial
    ? `at least ${formatBytes(size.bytes)}: too many files to count them all`
    : formatBytes(size.bytes);
  return { status: 'info', title, summary: `${dir} (${bytes}, ${size.entries} ${unit})` };
}

export function npxCacheCheck(host: DoctorHost): DoctorCheck {
  return check('npx-cache', async () => {
    const path = pathApi(host);
    let cache = host.env.npm_config_cache ?? host.env.NPM_CONFIG_CACHE;
    if (!cache) {
      const run = await host.exec(host.platform === 'win32' ? 'npm.cmd' : 'npm', ['config', 'get', 'cache']);
      cache = run.started && run.code === 0 ? run.stdout.trim() : undefined;
    }
    if (!cache) {
      cache =
        host.platform === 'win32'
          ? path.join(host.env.LOCALAPPDATA ?? path.join(homeOf(host), 'AppData', 'Local'), 'npm-cache')
          : path.join(homeOf(host), '.npm');
    }
    return cacheLine(host, 'npx cache', path.join(cache, '_npx'), 'package sets');
  });
}

/** The sandbox's own install cache: where, how much, and the installs under way. */
export function sandboxInstallCacheCheck(source: () => Promise<InstallCacheView | undefined>): DoctorCheck {
  return check('sandbox-install-cache', async () => {
    const title = 'sandbox install cache';
    const view = await source();
    if (!view) return { status: 'info', title, summary: 'empty: nothing installed yet' };
    const size = `${view.root} (${formatBytes(view.bytes)}, ${view.entries} entries)`;
    const now = view.installing.map((i) => `${i.spec} (since ${i.since}, process ${i.pid})`);
    return {
      status: 'info',
      title,
      summary: now.length > 0 ? `${size}; installing now: ${now.join(', ')}` : size,
    };
  });
}

/** The user's uv cache, where uv itself says (asked as `uvLocator` allows) and its size. */
export function uvCacheCheck(host: DoctorHost, find: () => Promise<FoundUv> = uvLocator(host)): DoctorCheck {
  return check('uv-cache', async () => cacheLine(host, 'uvx cache', await uvCacheDir(host, find), 'entries'));
}

export function e2bKeyCheck(host: DoctorHost): DoctorCheck {
  return check('e2b-key', async () =>
    host.env.E2B_API_KEY
      ? { status: 'ok', title: 'E2B_API_KEY', summary: 'set (its value is not shown)' }
      : {
          status: 'fail',
          title: 'E2B_API_KEY',
          summary: 'not set: the e2b backend cannot start sandboxes',
          fix: 'export E2B_API_KEY=<your key from https://e2b.dev/dashboard> (only needed for --backend e2b)',
        },
  );
}

/** uv, the Pythons uvx servers can use, and the uv cache: one look for uv shared by the three. */
export function pythonChecks(host: DoctorHost): DoctorCheck[] {
  const find = uvLocator(host);
  return [uvCheck(find), pythonCheck(host, find), uvCacheCheck(host, find)];
}

/** The checks doctor runs by default, in order. */
export function standardChecks(host: DoctorHost): DoctorCheck[] {
  return [
    nodeCheck(host),
    bubblewrapCheck(host),
    userNamespaceCheck(host),
    seccompCheck(host),
    ...(host.platform === 'win32' ? [wslCheck(host)] : []),
    npxCacheCheck(host),
    ...pythonChecks(host),
    e2bKeyCheck(host),
    secretsCheck(host),
  ];
}

/** On Windows the local OS sandbox is bubblewrap inside WSL2: is there a WSL2 distribution. */
export function wslCheck(host: DoctorHost): DoctorCheck {
  return check('wsl', async () => {
    const title = 'WSL2';
    const install = 'wsl --install (a WSL2 Ubuntu), then inside it: npm install -g mcp-sandbox';
    const run = await host.exec('wsl.exe', ['-l', '-v']);
    if (!run.started || run.code !== 0) {
      return {
        status: 'fail',
        title,
        summary: 'WSL is not installed: on Windows, local runs inside WSL2',
        fix: install,
      };
    }
    const distros = parseWslList(run.stdout);
    const two = distros.filter((d) => d.version === 2);
    if (two.length === 0) {
      return {
        status: 'fail',
        title,
        summary:
          distros.length > 0
            ? 'only WSL1 distributions (no Linux kernel namespaces there)'
            : 'no distribution installed',
        fix: distros.length > 0 ? `wsl --set-version ${distros[0]?.name} 2` : install,
      };
    }
    return {
      status: 'ok',
      title,
      summary: `${two.map((d) => d.name).join(', ')}: run servers as wsl.exe -e mcp-sandbox run -- <server> (drives are /mnt/c/…), with mcp-sandbox installed inside WSL`,
    };
  });
}

/**
 * An OS-sandbox backend built on bubblewrap is usable when bwrap is recent enough and really
 * creates the namespaces. A build that wires its backend's own probe should use that instead.
 */
export function bubblewrapBackendProbe(host: DoctorHost): BackendProbe {
  return async (): Promise<BackendStatus> => {
    const bwrap = await probeBubblewrap(host);
    if (bwrap.result.status !== 'ok') {
      return {
        usable: false,
        summary: bwrap.result.summary,
        ...(bwrap.result.fix ? { fix: bwrap.result.fix } : {}),
      };
    }
    const userns = await probeUserns(host);
    if (userns.status !== 'ok') {
      return {
        usable: false,
        summary: `user namespaces: ${userns.summary}`,
        ...(userns.fix ? { fix: userns.fix } : {}),
      };
    }
    return { usable: true, summary: `bubblewrap ${bwrap.version}, user namespaces work` };
  };
}

/** A backend that needs only a credential in the environment (nothing is contacted). */
export function envKeyBackendProbe(host: DoctorHost, name: string, fix: string): BackendProbe {
  return async () =>
    host.env[name]
      ? { usable: true, summary: `${name} is set (not contacted)` }
      : { usable: false, summary: `${name} is not set`, fix };
}

/** Probes for the backend names mcp-sandbox ships, used when a build injects none. */
export function defaultBackendProbes(host: DoctorHost): Record<string, BackendProbe> {
  return {
    local: bubblewrapBackendProbe(host),
    e2b: envKeyBackendProbe(
      host,
      'E2B_API_KEY',
      'export E2B_API_KEY=<your key from https://e2b.dev/dashboard>',
    ),
  };
}

/**
 * Adapts a backend package's own start-up probe (one that resolves when the backend can run and
 * throws a SandboxError saying what to fix when it cannot) to a doctor probe.
 */
export function backendProbeFrom<T>(probe: () => Promise<T>, describe?: (found: T) => string): BackendProbe {
  return async () => {
    try {
      const found = await probe();
      return { usable: true, summary: describe ? describe(found) : 'its probe passed' };
    } catch (error) {
      if (isSandboxError(error)) return { usable: false, summary: error.message };
      throw error;
    }
  };
}
