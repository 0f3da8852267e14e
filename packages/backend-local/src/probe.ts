import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter } from 'node:path';
import { BackendUnavailableError } from '@mcpsandbox/core';
import { findOnPath } from '@mcpsandbox/host-side';
import { isSeccompArch, type SeccompArch } from './filter/syscalls.js';

/** bubblewrap 0.8.0 added `--disable-userns`, which the sandbox relies on. */
export const MIN_BWRAP_VERSION = '0.8.0';

/** The uid and gid the sandbox runs as when the host process is root. */
export const NOBODY = { uid: 65534, gid: 65534 } as const;

/** Everything the start-up probe looks at. Tests and `doctor` may supply their own. */
export interface LocalProbeFacts {
  readonly platform: string;
  readonly arch: string;
  /** Effective uid of the host process. */
  readonly uid: number;
  readonly bwrapPath: string | undefined;
  /** From `bwrap --version`, e.g. `0.8.0`. */
  readonly bwrapVersion: string | undefined;
  readonly prlimitPath: string | undefined;
  /** util-linux's unshare, mount and setpriv; used as root to bind paths nobody could reach. */
  readonly stagingTools?: StagingTools;
  /** A real bwrap run with the sandbox's namespace flags; absent when bwrap is unusable anyway. */
  readonly trial: { readonly ok: boolean; readonly stderr: string } | undefined;
  /** Raw sysctl values, absent when the kernel has no such knob. */
  readonly sysctl: {
    readonly unprivilegedUsernsClone?: string;
    readonly apparmorRestrictUnprivilegedUserns?: string;
    readonly maxUserNamespaces?: string;
  };
}

export interface StagingTools {
  readonly unshare: string;
  readonly mount: string;
  readonly setpriv: string;
}

export interface LocalSandboxInfo {
  readonly bwrapPath: string;
  readonly bwrapVersion: string;
  readonly arch: SeccompArch;
  /** Set when the host process is root: the sandbox runs as this unprivileged user instead. */
  readonly runAs: { readonly uid: number; readonly gid: number } | undefined;
  /** `prlimit` for resource limits; absent means limits cannot be enforced. */
  readonly prlimitPath: string | undefined;
  /**
   * As root: tools to bind, in a private mount namespace, sources the sandbox user could not
   * reach by path (root's 0700 home). Absent when not root or when they are missing.
   */
  readonly staging: StagingTools | undefined;
  /** Things that work but weaker than asked, for stderr. */
  readonly warnings: readonly string[];
}

/**
 * What a session needs of the machine. The probe's version and trial run are not part of it: a
 * start does not wait for them (see `localHostInfo`), so its bubblewrap version may be unknown.
 */
export type LocalHostInfo = Omit<LocalSandboxInfo, 'bwrapVersion'> & { readonly bwrapVersion?: string };

export interface ProbeOptions {
  /** Replace gathered facts (tests, diagnostics). */
  readonly facts?: Partial<LocalProbeFacts>;
  readonly hostEnv?: Readonly<Record<string, string | undefined>>;
  /** Who the sandbox runs as when the host is root (default nobody, 65534). */
  readonly runAsWhenRoot?: { readonly uid: number; readonly gid: number };
}

/**
 * Checks that this machine can run the `local` sandbox and says exactly what to fix when it
 * cannot. Never falls back to something weaker: it resolves with what it found, or throws a
 * {@link BackendUnavailableError} whose `code` names the failure.
 */
export async function probeLocalSandbox(options: ProbeOptions = {}): Promise<LocalSandboxInfo> {
  const runAs = options.runAsWhenRoot ?? NOBODY;
  const facts = await gatherFacts(options.facts ?? {}, options.hostEnv ?? process.env, runAs);
  return evaluateLocalProbe(facts, runAs);
}

/**
 * The probe without running anything: every check that needs no bwrap run (the platform, the
 * architecture, bwrap on the PATH, prlimit, the staging tools). The two it leaves out, the
 * version and the trial sandbox, are what the first real sandbox tests anyway: bwrap refuses a
 * flag it lacks and a namespace it cannot make, before it runs anything. When that first start
 * fails, the full probe runs and says why (see session/probe-once.ts). Nothing is weaker: a
 * sandbox that starts has every namespace and flag it asked for.
 */
export async function localHostInfo(options: ProbeOptions = {}): Promise<LocalHostInfo> {
  const runAs = options.runAsWhenRoot ?? NOBODY;
  const facts = await gatherFacts(
    // Stand-ins for the two runs left out, so that the verdict below judges everything else.
    { bwrapVersion: MIN_BWRAP_VERSION, trial: { ok: true, stderr: '' }, ...options.facts },
    options.hostEnv ?? process.env,
    runAs,
  );
  const { bwrapVersion: _unchecked, ...info } = evaluateLocalProbe(facts, runAs);
  return info;
}

/** The pure half of the probe: facts in, verdict out. */
export function evaluateLocalProbe(
  facts: LocalProbeFacts,
  runAsWhenRoot: { readonly uid: number; readonly gid: number } = NOBODY,
): LocalSandboxInfo {
  if (facts.platform !== 'linux') {
    throw new BackendUnavailableError(
      `the local backend is not yet supported on this platform (${facts.platform}); use --backend e2b`,
      { code: 'E_LOCAL_UNSUPPORTED_PLATFORM' },
    );
  }
  if (!isSeccompArch(facts.arch)) {
    throw new BackendUnavailableError(
      `the local backend has no seccomp filter for this CPU architecture (${facts.arch}); use --backend e2b`,
      { code: 'E_LOCAL_UNSUPPORTED_ARCH' },
    );
  }
  if (!facts.bwrapPath || !facts.bwrapVersion) {
    throw new BackendUnavailableError(
      'bubblewrap (bwrap) is not installed; the local backend needs it. Install it: ' +
        'sudo apt-get install bubblewrap (Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap)',
      { code: 'E_BWRAP_MISSING' },
    );
  }
  if (compareVersions(facts.bwrapVersion, MIN_BWRAP_VERSION) < 0) {
    throw new BackendUnavailableError(
      `bubblewrap ${facts.bwrapVersion} at ${facts.bwrapPath} is too old: the local backend needs ` +
        `${MIN_BWRAP_VERSION} or newer (for --disable-userns). Upgrade it (Debian 12, Ubuntu 24.04 and ` +
        'newer ship a recent one: sudo apt-get install bubblewrap)',
      { code: 'E_BWRAP_TOO_OLD' },
    );
  }
  if (!facts.trial?.ok) {
    throw userNamespaceError(facts);
  }
  const warnings: string[] = [];
  if (!facts.prlimitPath) {
    warnings.push(
      'prlimit (util-linux) not found: process, memory and open-file limits cannot be enforced; ' +
        'install util-linux to enforce them',
    );
  }
  return {
    bwrapPath: facts.bwrapPath,
    bwrapVersion: facts.bwrapVersion,
    arch: facts.arch,
    runAs: facts.uid === 0 ? runAsWhenRoot : undefined,
    prlimitPath: facts.prlimitPath,
    staging: facts.uid === 0 ? facts.stagingTools : undefined,
    warnings,
  };
}

function userNamespaceError(facts: LocalProbeFacts): BackendUnavailableError {
  const stderr = facts.trial?.stderr.trim() ?? '';
  const said = stderr ? ` (bwrap said: ${stderr.split('\n')[0]})` : '';
  const { sysctl } = facts;
  if (sysctl.apparmorRestrictUnprivilegedUserns === '1') {
    return new BackendUnavailableError(
      `user namespaces are blocked by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10+)${said}. ` +
        'Allow bubblewrap with its AppArmor profile: sudo cp /usr/share/apparmor/extra-profiles/bwrap-userns-restrict ' +
        '/etc/apparmor.d/ && sudo systemctl reload apparmor (or, machine-wide: ' +
        'sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0)',
      { code: 'E_USERNS_BLOCKED' },
    );
  }
  if (sysctl.unprivilegedUsernsClone === '0') {
    return new BackendUnavailableError(
      `unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)${said}. ` +
        'Enable them: sudo sysctl -w kernel.unprivileged_userns_clone=1 ' +
        '(persist it in /etc/sysctl.d/), or install bubblewrap setuid',
      { code: 'E_USERNS_BLOCKED' },
    );
  }
  if (sysctl.maxUserNamespaces === '0') {
    return new BackendUnavailableError(
      `user namespaces are disabled (user.max_user_namespaces=0)${said}. ` +
        'Enable them: sudo sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/)',
      { code: 'E_USERNS_BLOCKED' },
    );
  }
  if (/namespace|uid map|Operation not permitted|Permission denied|No space left/i.test(stderr)) {
    return new BackendUnavailableError(
      `bubblewrap cannot create the sandbox's namespaces${said}. User namespaces look blocked: check ` +
        'kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns ' +
        'and any container runtime seccomp profile that forbids unshare',
      { code: 'E_USERNS_BLOCKED' },
    );
  }
  return new BackendUnavailableError(`bubblewrap failed its start-up check${said}`, {
    code: 'E_BWRAP_FAILED',
  });
}

/** Compares dotted versions numerically; missing parts count as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((part) => Number.parseInt(part, 10) || 0);
  const pb = b.split('.').map((part) => Number.parseInt(part, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

const STANDARD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

async function gatherFacts(
  given: Partial<LocalProbeFacts>,
  hostEnv: Readonly<Record<string, string | undefined>>,
  runAs: { readonly uid: number; readonly gid: number },
): Promise<LocalProbeFacts> {
  const platform = given.platform ?? process.platform;
  const arch = given.arch ?? process.arch;
  const uid = given.uid ?? process.getuid?.() ?? -1;
  const searchPath = `${hostEnv.PATH ?? ''}${delimiter}${STANDARD_PATH}`;
  const bwrapPath = 'bwrapPath' in given ? given.bwrapPath : findOnPath('bwrap', searchPath);
  const prlimitPath = 'prlimitPath' in given ? given.prlimitPath : findOnPath('prlimit', searchPath);
  // `bwrap --version` and the trial sandbox run side by side: they are most of the probe's time on
  // every start. A trial of a bwrap too old for its flags fails, and the version check then says why.
  const canRun = platform === 'linux' && bwrapPath !== undefined;
  const versionRun =
    !('bwrapVersion' in given) && canRun ? run(bwrapPath, ['--version'], undefined) : undefined;
  const trialRun =
    !('trial' in given) && canRun && (!('bwrapVersion' in given) || given.bwrapVersion !== undefined)
      ? run(
          bwrapPath,
          [
            '--unshare-all',
            '--unshare-user',
            '--disable-userns',
            '--die-with-parent',
            '--new-session',
            '--ro-bind',
            '/',
            '/',
            '--proc',
            '/proc',
            '--dev',
            '/dev',
            '--',
            'true',
          ],
          uid === 0 ? runAs : undefined,
        )
      : undefined;
  const bwrapVersion = versionRun
    ? /(\d+\.\d+(?:\.\d+)?)/.exec((await versionRun).stdout)?.[1]
    : given.bwrapVersion;
  let trial = given.trial;
  if (trialRun) {
    const result = await trialRun;
    // Only a recent enough bwrap gets a verdict from its trial; an old one fails on its flags.
    if (bwrapVersion && compareVersions(bwrapVersion, MIN_BWRAP_VERSION) >= 0) {
      trial = { ok: result.code === 0, stderr: result.stderr };
    }
  }
  const sysctl = given.sysctl ?? {
    ...readKnob('unprivilegedUsernsClone', '/proc/sys/kernel/unprivileged_userns_clone'),
    ...readKnob(
      'apparmorRestrictUnprivilegedUserns',
      '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
    ),
    ...readKnob('maxUserNamespaces', '/proc/sys/user/max_user_namespaces'),
  };
  let stagingTools = given.stagingTools;
  if (!('stagingTools' in given) && uid === 0) {
    const [unshare, mount, setpriv] = ['unshare', 'mount', 'setpriv'].map((name) =>
      findOnPath(name, searchPath),
    );
    if (unshare && mount && setpriv) stagingTools = { unshare, mount, setpriv };
  }
  return {
    platform,
    arch,
    uid,
    bwrapPath,
    bwrapVersion,
    prlimitPath,
    trial,
    sysctl,
    ...(stagingTools ? { stagingTools } : {}),
  };
}

function readKnob(key: string, path: string): Record<string, string> {
  try {
    return { [key]: readFileSync(path, 'utf8').trim() };
  } catch {
    return {};
  }
}

function run(
  file: string,
  args: readonly string[],
  runAs: { readonly uid: number; readonly gid: number } | undefined,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { env: { PATH: STANDARD_PATH }, timeout: 10_000, ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) || (error?.message ?? '') });
      },
    );
  });
}
