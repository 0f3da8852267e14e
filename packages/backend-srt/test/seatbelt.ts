import { execFileSync } from 'node:child_process';
import { getDefaultWritePaths } from '@anthropic-ai/sandbox-runtime';
// srt's macOS wrapper is not exported from its root: the profile builder behind it is what
// sandbox-exec gets on macOS, so the goldens take it from there (test-only import).
import { wrapCommandWithSandboxMacOS } from '@anthropic-ai/sandbox-runtime/dist/sandbox/macos-sandbox-utils.js';
import { innerCommand } from '../src/launch.js';
import type { SrtFilesystem } from '../src/policy.js';

/** The port our host listener would have; fixed so the goldens are stable. */
export const GOLDEN_PROXY_PORT = 41999;

/**
 * The Seatbelt profile srt 0.0.83 makes on macOS for one of our per-command filesystem configs,
 * fed the way srt's manager feeds its wrapper (readConfig/writeConfig from the per-command
 * config, srt's own default write paths, network restricted to the proxy ports of
 * {@link srtManagerConfig}). Deterministic: the host's HOME and cwd are pinned while it is
 * built (srt reads both) and the random log tag is normalised.
 */
export function seatbeltProfile(filesystem: SrtFilesystem, hostHome: string): string {
  const saved = { home: process.env.HOME, cwd: process.cwd() };
  process.env.HOME = hostHome;
  process.chdir('/');
  let wrapped: string;
  try {
    wrapped = wrapCommandWithSandboxMacOS({
      command: innerCommand(['/usr/local/bin/node', 'server.js'], { HOME: hostHome }, 'macos'),
      needsNetworkRestriction: true,
      httpProxyPort: GOLDEN_PROXY_PORT,
      socksProxyPort: GOLDEN_PROXY_PORT,
      readConfig: { denyOnly: filesystem.denyRead, allowWithinDeny: filesystem.allowRead },
      writeConfig: {
        allowOnly: [
          ...getDefaultWritePaths({ denyRead: filesystem.denyRead, allowRead: filesystem.allowRead }),
          ...filesystem.allowWrite,
        ],
        denyWithinAllow: filesystem.denyWrite,
      },
      allowGitConfig: false,
      enableWeakerNetworkIsolation: false,
      allowAppleEvents: false,
      binShell: '/bin/sh',
    });
  } finally {
    process.chdir(saved.cwd);
    if (saved.home === undefined) delete process.env.HOME;
    else process.env.HOME = saved.home;
  }
  return normalise(profileOf(wrapped));
}

/** The argument after `-p` in srt's quoted `env … sandbox-exec -p PROFILE sh -c CMD`. */
function profileOf(wrapped: string): string {
  const out = execFileSync('/bin/sh', ['-c', 'eval "set -- $1"; printf "%s\\0" "$@"', 'sh', wrapped]);
  const argv = out.toString('utf8').split('\0');
  const at = argv.indexOf('-p');
  const profile = at >= 0 ? argv[at + 1] : undefined;
  if (profile === undefined) throw new Error('no -p in the wrapped command');
  return profile;
}

function normalise(profile: string): string {
  return profile.replace(/CMD64_[A-Za-z0-9+/=]*_END_[A-Za-z0-9_]+/g, 'CMD64_<tag>');
}

/** One top-level rule of a profile: `(allow file-read* (subpath "/x") …)`. */
export interface Rule {
  readonly action: string;
  readonly ops: readonly string[];
  /** Each filter as its words: `['subpath', '/x']`, `['remote', 'ip', 'localhost:1']`. */
  readonly filters: readonly (readonly string[])[];
}

type Sexp = string | Sexp[];

const words = (form: Sexp): string[] => (typeof form === 'string' ? [form] : form.flatMap(words));

/** The profile's top-level `allow`/`deny` rules (SBPL is s-expressions; `;` starts a comment). */
export function rulesOf(profile: string): Rule[] {
  const tokens = profile.replace(/;[^\n]*/g, '').match(/"(?:[^"\\]|\\.)*"|[()]|[^\s()"]+/g) ?? [];
  let at = 0;
  const read = (): Sexp => {
    const token = tokens[at++];
    if (token !== '(') return token?.startsWith('"') ? (JSON.parse(token) as string) : (token ?? '');
    const list: Sexp[] = [];
    while (tokens[at] !== ')' && at < tokens.length) list.push(read());
    at++;
    return list;
  };
  const rules: Rule[] = [];
  while (at < tokens.length) {
    const form = read();
    if (!Array.isArray(form) || (form[0] !== 'allow' && form[0] !== 'deny')) continue;
    const [action, ...rest] = form as [string, ...Sexp[]];
    const ops = rest.filter((item): item is string => typeof item === 'string');
    const filters = rest
      .filter((item): item is Sexp[] => Array.isArray(item) && item[0] !== 'with')
      .map(words);
    rules.push({ action, ops, filters });
  }
  return rules;
}
