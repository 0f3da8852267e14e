import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  escapeControls,
  grantFlagValue,
  type Host,
  hostText,
  parseHost,
  type SandboxEvent,
} from '@mcpsandbox/core';
import { closeDir, openOwnedDir, writeFileAt } from './host-fs.js';

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
  readonly #refused = new Map<string, { readonly host: Host; readonly port: number }>();
  #invalid = 0;

  /** Feed every chunk of the install's stdout and stderr. */
  output(chunk: Uint8Array): void {
    const joined = Buffer.concat([this.#output, chunk]);
    this.#output = joined.length > LOG_BYTES ? joined.subarray(joined.length - LOG_BYTES) : joined;
  }

  /**
   * Feed the install's proxy events: a refused host is one its scripts tried. The host is parsed
   * again here (a fix-it line is built from it): one that is not a plain name or IP is only counted.
   */
  event(event: SandboxEvent): void {
    if (event.type !== 'proxy' || event.decision !== 'deny') return;
    const host = typeof event.host === 'string' ? parseHost(event.host) : undefined;
    const port = event.port;
    if (
      host === undefined ||
      typeof port !== 'number' ||
      !Number.isInteger(port) ||
      port < 1 ||
      port > 65535
    ) {
      this.#invalid++;
      return;
    }
    this.#refused.set(`${hostText(host)}:${port}`, { host, port });
  }

  /** `host:port` of each refused host, as shown in a message. */
  get refusedHosts(): readonly string[] {
    return [...this.#refused.keys()];
  }

  /** The `--install-allow-net` value that grants each refused host (443 and 80 need no port). */
  get refusedGrants(): readonly string[] {
    return [...new Set([...this.#refused.values()].map(({ host, port }) => grantFlagValue(host, port)))];
  }

  /** Refusals of hosts that are not valid host names: no flag can grant them. */
  get invalidHosts(): number {
    return this.#invalid;
  }

  /** npm's own error lines (`npm error …`, `npm ERR! …`), without its stack lines; else the last lines. */
  npmSaid(max = 8): string[] {
    const lines = this.#output
      .toString('utf8')
      .split(/\r?\n/)
      .map((line) => escapeControls(line.trimEnd()))
      .filter(Boolean);
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
