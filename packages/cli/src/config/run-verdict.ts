import { posix } from 'node:path';
import {
  type IsolationLevel,
  isolationRank,
  knownSecretHosts,
  looksSecret,
  parseSecretFlag,
  secretFlagFor,
} from '@mcpsandbox/core';
import type { BackendRegistry } from '../backends.js';
import type { RunWords } from '../commands/run.js';
import { substitutesSecrets } from '../commands/secret-plan.js';
import { BACKEND_ENV } from '../compat.js';
import { parseFs } from '../fs-copy.js';
import { parseAllowNet, parseMount, parseSetting } from '../parse.js';
import { knownSecretsOfServer } from './env-flags.js';
import { hostPathRefusal } from './path-mounts.js';

type Env = Readonly<Record<string, string | undefined>>;

/** What judging a config entry's run options depends on: the binary's backends and the user's env. */
export interface VerdictContext {
  readonly backends: BackendRegistry;
  /** The binary's default backend (before `MCP_SANDBOX_BACKEND`). */
  readonly defaultBackend: string;
  /** The user's environment: their home, and their own `MCP_SANDBOX_BACKEND`. */
  readonly env: Env;
}

/** Whether the run options of an entry with our launcher keep it sandboxed, and what they grant. */
export interface RunVerdict {
  /** The backend the entry runs on, and whether no `--backend` named it. */
  readonly backend: string;
  readonly backendIsDefault: boolean;
  /** Why the entry is not sandboxed, one reason a line, in words; empty when it is. */
  readonly weakenedBy: readonly string[];
  /** What it lets the server do on the host though sandboxed (rw mounts, network), in words. */
  readonly grants: readonly string[];
}

/**
 * `--backend-option` keys that only bound a sandbox (sizes, counts, timeouts). Every other key
 * (`npmRegistry`, `npmCacheDir`, `stateDir`, `stateRoot`, …) chooses where code comes from or a
 * host folder, which only the user's own configuration may: such an entry is not one wrap writes.
 */
const BOUNDING_SETTINGS = new Set([
  'maxProcesses',
  'tmpSize',
  'shmSize',
  'npmUserCache',
  'installTimeoutMs',
  'requestTimeoutMs',
  'denialHints',
  'memory',
  'timeout',
]);

/**
 * Every run option the judge below has weighed: those it checks (backend, mounts, copies, host
 * files, backend settings), those it prints (network, install grants) and those that only narrow
 * or bound a session. An option `run` gains later is not counted sandboxed until it is weighed here
 * (the test of this module fails until then): it may choose where code comes from.
 */
export const JUDGED_OPTIONS: ReadonlySet<string> = new Set([
  'backend',
  'mount',
  'fs',
  'trace',
  'pinTools',
  'backendOption',
  'allowNet',
  'installAllowNet',
  'installEnv',
  'env',
  'ttl',
  'setup',
  'hostTlsTrust',
  'template',
  'state',
  'autoMount',
  'allowTool',
  'denyTool',
  'pinToolsStrict',
  'requireIsolation',
  'quiet',
  'maxMessageSize',
  'drainTimeout',
  'killGrace',
  'wrapped',
  'projectNpmrc',
  'secret',
]);

const WEAKER: Readonly<Record<IsolationLevel, string>> = {
  none: 'no sandbox, the server runs with your user, files and network',
  language: 'language isolation (a node:vm worker), weaker than an OS sandbox',
  os: '',
  microvm: '',
};

/**
 * Judges the parsed run options of an entry whose launcher is mcp-sandbox: sandboxed only on a
 * built-in backend of OS isolation or stronger (a module backend runs on the host), with no
 * mount or copy of the home or a credentials folder, no host path the client's working folder
 * decides, and no setting that picks where code comes from.
 */
export function judgeRunWords(
  run: RunWords,
  entry: { readonly env: Env; readonly envKeys: readonly string[] },
  ctx: VerdictContext,
): RunVerdict {
  const weakenedBy: string[] = [];
  const grants: string[] = [];
  const { flags } = run;
  const chosen = chosenBackend(run, entry.env, ctx);
  const backendWeakness = judgeBackend(chosen.name, ctx.backends);
  if (backendWeakness) weakenedBy.push(`${chosen.label}: ${backendWeakness}`);
  for (const { key, flag } of run.given) {
    if (!JUDGED_OPTIONS.has(key))
      weakenedBy.push(`${flag}: an option ls does not weigh, so not counted as sandboxed`);
  }
  const home = ctx.env.HOME;
  for (const text of flags.mount) judgeMount(text, home, weakenedBy, grants);
  for (const text of flags.fs) judgeCopy(text, home, weakenedBy, grants);
  for (const [flag, value] of [
    ['--trace', flags.trace],
    ['--pin-tools', flags.pinTools],
  ] as const) {
    if (value === undefined) continue;
    const where = hostFile(flag, value, home);
    if (where.weak) weakenedBy.push(where.weak);
    else grants.push(`writes ${value} (${flag})`);
  }
  if (flags.projectNpmrc) {
    weakenedBy.push(
      "--project-npmrc: the working folder's .npmrc (which a server may have written) chooses the npm registry",
    );
  }
  for (const text of flags.backendOption) {
    const key = safely(() => parseSetting(text)[0]);
    if (key !== undefined && !BOUNDING_SETTINGS.has(key)) {
      weakenedBy.push(
        `--backend-option ${key}=…: it chooses where code comes from or a host folder, which only your own configuration may`,
      );
    }
  }
  for (const host of flags.allowNet) {
    const grant = safely(() => parseAllowNet(host));
    if (grant !== undefined)
      grants.push(
        grant === '*' ? 'reaches any public address (--allow-net *)' : `reaches ${grant} (--allow-net)`,
      );
  }
  // `--env KEY` for a name the entry's env block does not set: the value is the client's own.
  for (const item of flags.env) {
    const name = item.split('=')[0] ?? '';
    if (looksSecret(name) || knownSecretHosts(name) !== undefined)
      grants.push(inClear(name, run, chosen.name));
    else if (!item.includes('=') && !entry.envKeys.includes(name))
      grants.push(`gets ${name} from the client's environment (--env)`);
  }
  // A bound secret never enters the sandbox: said as what it is, the real value's only destinations.
  for (const text of flags.secret ?? []) {
    const binding = safely(() => parseSecretFlag(text));
    if (binding === undefined) weakenedBy.push('--secret: a value run refuses');
    else grants.push(`puts ${binding.name} on the wire to ${binding.hosts.join(', ')} only (--secret)`);
  }
  for (const host of flags.installAllowNet)
    grants.push(`its install step reaches ${host} (--install-allow-net)`);
  for (const item of flags.installEnv) {
    grants.push(`its install step gets ${item.split('=')[0]} (--install-env)`);
  }
  return { backend: chosen.name, backendIsDefault: !run.backendGiven, weakenedBy, grants };
}

/**
 * A secret passed with `--env`: the sandbox holds the real value, and with it any granted host
 * could receive it. Where its host is known for this server and the backend substitutes, the
 * `--secret` that keeps it out is named.
 */
function inClear(name: string, run: RunWords, backend: string): string {
  const known = knownSecretsOfServer(run.command).find((s) => s.variable === name);
  const instead =
    known && substitutesSecrets(backend) ? `; --secret ${secretFlagFor(known)} would keep it out` : '';
  return `holds ${name} in clear (--env)${instead}`;
}

/** `--backend`, else the entry's own `MCP_SANDBOX_BACKEND`, else the user's, else the default. */
function chosenBackend(run: RunWords, entryEnv: Env, ctx: VerdictContext): { name: string; label: string } {
  if (run.backendGiven) return { name: run.flags.backend, label: `--backend ${run.flags.backend}` };
  const own = entryEnv[BACKEND_ENV]?.trim();
  if (own) return { name: own, label: `${BACKEND_ENV}=${own} in its "env" block` };
  const user = ctx.env[BACKEND_ENV]?.trim();
  if (user) return { name: user, label: `${BACKEND_ENV}=${user} in your environment` };
  return { name: ctx.defaultBackend, label: `the default backend ${ctx.defaultBackend}` };
}

function judgeBackend(name: string, backends: BackendRegistry): string | undefined {
  const entry = Object.hasOwn(backends, name) ? backends[name] : undefined;
  if (!entry) {
    return name.startsWith('.') || name.startsWith('@') || /[/\\]|\.[cm]?js$/.test(name)
      ? 'a module, which runs on the host with your user before any sandbox exists'
      : 'not a backend of this mcp-sandbox';
  }
  if (entry.isolation === undefined) return 'a backend that declares no isolation';
  return isolationRank(entry.isolation) < isolationRank('os') ? WEAKER[entry.isolation] : undefined;
}

function judgeMount(text: string, home: string | undefined, weakenedBy: string[], grants: string[]): void {
  const host = text.split(':')[0] ?? '';
  if (!posix.isAbsolute(host)) {
    weakenedBy.push(
      `--mount ${text}: a relative host path, which the client resolves against a folder of its own`,
    );
    return;
  }
  // A path that does not exist: run refuses the entry before any sandbox exists.
  const spec = safely(() => parseMount(text, '/'));
  if (!spec) return;
  const refused = hostPathRefusal(spec.hostPath, home);
  if (refused) weakenedBy.push(`--mount ${spec.hostPath} (${spec.mode}): ${refused}`);
  else if (spec.mode === 'rw') grants.push(`writes ${spec.hostPath} (rw mount)`);
}

function judgeCopy(text: string, home: string | undefined, weakenedBy: string[], grants: string[]): void {
  const host = text.split(':')[0] ?? '';
  if (!posix.isAbsolute(host)) {
    weakenedBy.push(
      `--fs ${text}: a relative host path, which the client resolves against a folder of its own`,
    );
    return;
  }
  const spec = safely(() => parseFs(text, '/'));
  if (!spec) return;
  const refused = hostPathRefusal(spec.hostPath, home);
  if (refused) weakenedBy.push(`--fs ${spec.hostPath}: ${refused}`);
  else grants.push(`gets a copy of ${spec.hostPath} (--fs)`);
}

/** A file the host writes for the entry (`--trace`, `--pin-tools`): absolute, and none of the user's settings. */
function hostFile(flag: string, value: string, home: string | undefined): { weak?: string } {
  if (!posix.isAbsolute(value)) {
    return {
      weak: `${flag} ${value}: a relative path, which the client resolves against a folder of its own`,
    };
  }
  const refused = hostPathRefusal(value, home);
  return refused ? { weak: `${flag} ${value}: the host would write into ${refused}` } : {};
}

function safely<T>(parse: () => T): T | undefined {
  try {
    return parse();
  } catch {
    return undefined;
  }
}
