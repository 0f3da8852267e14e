import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  escapeControls,
  grantFlagValue,
  type Host,
  hostText,
  parseHost,
  parseIpLiteral,
  type SandboxEvent,
} from '@mcpsandbox/core';
import { closeDir, openOwnedDir, writeFileAt } from './host-fs.js';
import { describeNpmCause, failedScriptPath, parseNpmCause } from './npm-cause.js';

/** An errno-style code as the egress side records it; anything else is not shown. */
const ERROR_CODE = /^E[A-Z0-9_]{1,31}$/;

/** The most of an install's output kept for its log (the tail: where npm says what went wrong). */
const LOG_BYTES = 1024 * 1024;

/**
 * What an install step said and tried, kept on the host so that a failure can be explained:
 * npm's own `npm error` lines, the hosts its scripts were refused, and a log the user can read
 * after the sandbox is gone. Everything here was written by the package: it is shown with its
 * control characters escaped, and stored, never interpreted.
 */
export class InstallReport {
  #output = Buffer.alloc(0);
  /** Where the current attempt's output starts in #output (an earlier one stays in the log). */
  #attemptStart = 0;
  readonly #refused = new Map<string, { readonly host: Host; readonly port: number }>();
  /** Granted hosts the host side could not reach, each with why, in this module's words. */
  readonly #unreachable = new Map<string, { readonly host: Host; readonly why: string }>();
  #invalid = 0;

  /** Feed every chunk of the install's stdout and stderr. */
  output(chunk: Uint8Array): void {
    const joined = Buffer.concat([this.#output, chunk]);
    const cut = Math.max(0, joined.length - LOG_BYTES);
    this.#output = cut > 0 ? joined.subarray(cut) : joined;
    this.#attemptStart = Math.max(0, this.#attemptStart - cut);
  }

  /**
   * The step runs again (after an optional dependency was skipped): what the last attempt tried
   * and said is no longer the cause of anything; its output stays in the log.
   */
  nextAttempt(): void {
    this.#attemptStart = this.#output.length;
    this.#refused.clear();
    this.#unreachable.clear();
    this.#invalid = 0;
  }

  /** The current attempt's output, as lines (unescaped: parse only, never show). */
  #lines(): string[] {
    return this.#output
      .subarray(this.#attemptStart)
      .toString('utf8')
      .split(/\r?\n/)
      .map((l) => l.trimEnd());
  }

  /**
   * The path below `inside` (the install prefix) of the package whose script failed, from npm's
   * `npm error path` line right after its last `npm error code` line; undefined if none.
   */
  failedPath(inside: string): string | undefined {
    return failedScriptPath(this.#lines(), inside);
  }

  /**
   * Feed the install's proxy events: a refused host is one its scripts tried. The host is parsed
   * again here (a fix-it line is built from it): one that is not a plain name or IP is only counted.
   */
  event(event: SandboxEvent): void {
    const failed = event.type === 'egress-failed';
    if (!failed && (event.type !== 'proxy' || event.decision !== 'deny')) return;
    const host = typeof event.host === 'string' ? parseHost(event.host) : undefined;
    const port = event.port;
    if (
      host === undefined ||
      typeof port !== 'number' ||
      !Number.isInteger(port) ||
      port < 1 ||
      port > 65535
    ) {
      if (!failed) this.#invalid++;
      return;
    }
    const reason = typeof event.reason === 'string' ? event.reason : '';
    const why = failed ? connectFailure(reason) : hostSideFailure(reason);
    if (why !== undefined) {
      // Granted, and the grants let it through: asking for the grant again would not help.
      if (!this.#unreachable.has(host.value)) this.#unreachable.set(host.value, { host, why });
      return;
    }
    if (failed) return;
    this.#refused.set(`${hostText(host)}:${port}`, { host, port });
  }

  /**
   * The hosts refused as not granted, less those `granted` already names (the user's
   * `--install-allow-net` entries, compared as parsed hosts, never as text), and the granted hosts
   * that failed on the host side, with why.
   */
  hosts(granted: readonly string[]): {
    readonly refused: readonly string[];
    readonly grants: readonly string[];
    readonly unreachable: readonly string[];
  } {
    const given = granted.map(grantHost).filter((g) => g !== undefined);
    const covered = (host: Host, port: number) =>
      given.some((g) => g.host === host.value && (g.port === undefined || g.port === port));
    const refused = [...this.#refused.entries()].filter(([, { host, port }]) => !covered(host, port));
    const unreachable = [...this.#unreachable.values()].map(({ host, why }) => `${hostText(host)}: ${why}`);
    for (const { host, port } of this.#refused.values()) {
      if (covered(host, port) && !this.#unreachable.has(host.value)) {
        unreachable.push(`${hostText(host)}: refused by the proxy on port ${port}`);
      }
    }
    return {
      refused: refused.map(([key]) => key),
      grants: [...new Set(refused.map(([, { host, port }]) => grantFlagValue(host, port)))],
      unreachable,
    };
  }

  /** npm's own reason, from its `npm error code` line, in this module's words; undefined if none. */
  npmCause(): string | undefined {
    const cause = parseNpmCause(this.#lines());
    return cause === undefined ? undefined : describeNpmCause(cause);
  }

  /** Refusals of hosts that are not valid host names: no flag can grant them. */
  get invalidHosts(): number {
    return this.#invalid;
  }

  /** npm's own error lines (`npm error …`, `npm ERR! …`), without its stack lines; else the last lines. */
  npmSaid(max = 8): string[] {
    const lines = this.#lines().map(escapeControls).filter(Boolean);
    const own = lines.filter((l) => /^npm (error|ERR!)/.test(l) && !/^npm (error|ERR!)\s+at /.test(l));
    const picked = own.length > 0 ? own : lines.filter((l) => !/^\s+at /.test(l));
    return picked.slice(0, max).concat(picked.length > max ? [`… (${picked.length - max} more)`] : []);
  }

  /**
   * Writes the kept output to `<dir>/<name>` (a new file in a directory of this user's that no one
   * else may write) and returns its path; undefined when it cannot be written.
   */
  saveLog(dir: string, name: string): string | undefined {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const opened = openOwnedDir(dir);
      try {
        writeFileAt(opened, name, this.#output, 0o600);
      } finally {
        closeDir(opened);
      }
      return join(dir, name);
    } catch {
      return undefined;
    }
  }
}

/** Why a deny was the host side's failure for a granted host (not the grants'): or undefined. */
function hostSideFailure(reason: string): string | undefined {
  if (reason.startsWith('cannot resolve: ')) {
    const code = reason.slice('cannot resolve: '.length);
    return ERROR_CODE.test(code)
      ? `does not resolve from this host (${code})`
      : 'does not resolve from this host';
  }
  const ip = /^resolves to (\S+) \(/.exec(reason)?.[1];
  const address = ip === undefined ? undefined : parseIpLiteral(ip);
  if (address === undefined) return undefined;
  const shown = address.includes(':') ? `[${address}]` : address;
  return `resolves to ${shown}, which the address rules refuse (grant that address itself if you mean it: --install-allow-net ${shown})`;
}

function connectFailure(reason: string): string {
  return ERROR_CODE.test(reason) ? `connecting failed (${reason})` : 'connecting failed';
}

/**
 * The host and port of a grant entry (`host`, `host:port`, `[v6]:port`, an IP), parsed; undefined
 * for `*.suffix`, `*` and anything else (such an entry is never compared, only not suggested).
 */
function grantHost(entry: string): { readonly host: string; readonly port?: number } | undefined {
  const text = entry.trim();
  const whole = parseIpLiteral(text);
  if (whole !== undefined) return { host: whole };
  const split = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(text);
  const host = split ? parseHost(split[1] as string) : undefined;
  if (host === undefined) return undefined;
  return split?.[2] === undefined ? { host: host.value } : { host: host.value, port: Number(split[2]) };
}
