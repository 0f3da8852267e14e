import { isIP } from 'node:net';
import type { Logger, SandboxEvent } from '@mcpsandbox/core';
import { matchGrant, type NetGrant, normalizeHost } from './grants.js';

/**
 * The reserved loopback block for transparent egress inside the sandbox's network namespace:
 * the DNS responder at 127.77.0.1, one synthetic address per granted name from 127.77.0.2 on.
 * The namespace has nothing else on these addresses; nothing outside it sees them.
 */
export const SYNTHETIC_PREFIX = '127.77.';
export const SANDBOX_DNS_ADDRESS = '127.77.0.1';
const FIRST_HOST = 2;
const LAST_HOST = 0xfffe;

/** Ports a grant without a port gets transparent listeners on. */
export const DEFAULT_TRANSPARENT_PORTS = [80, 443] as const;

/**
 * One synthetic loopback address per name, handed out in order and stable for the session
 * (every exec of a sandbox shares one table, so a name keeps its address across processes).
 */
export class SyntheticNames {
  readonly #byName = new Map<string, string>();
  readonly #byAddress = new Map<string, string>();
  #next = FIRST_HOST;

  /** The address for `name`, allocating one; undefined once the block is used up. */
  addressFor(name: string): string | undefined {
    const known = this.#byName.get(name);
    if (known !== undefined) return known;
    if (this.#next > LAST_HOST) return undefined;
    const n = this.#next++;
    const address = `${SYNTHETIC_PREFIX}${n >> 8}.${n & 255}`;
    this.#byName.set(name, address);
    this.#byAddress.set(address, name);
    return address;
  }

  /** The name an address was handed out for; undefined for any other address. */
  nameOf(address: string): string | undefined {
    return this.#byAddress.get(address.startsWith('::ffff:') ? address.slice(7) : address);
  }
}

/** True when some grant admits `name` on some port (an IP grant never covers a name). */
export function nameIsGranted(grants: readonly NetGrant[], name: string): boolean {
  if (isIP(name)) return false;
  return grants.some((grant) => grant.kind !== 'ip' && matchGrant([{ ...grant, port: undefined }], name, 0));
}

/**
 * The TCP ports that get a transparent listener: each name grant's port, or 80 and 443 when it
 * names none. `reserved` ports (the DNS responder's and the proxy's) are left out.
 */
export function transparentPorts(grants: readonly NetGrant[], reserved: readonly number[]): number[] {
  const ports = new Set<number>();
  for (const grant of grants) {
    if (grant.kind === 'ip') continue;
    if (grant.port === undefined) for (const port of DEFAULT_TRANSPARENT_PORTS) ports.add(port);
    else ports.add(grant.port);
  }
  for (const port of reserved) ports.delete(port);
  return [...ports].sort((a, b) => a - b);
}

/** A host name as it may appear on a terminal: letters, digits, `-`, `_` and dots only. */
const PRINTABLE_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

export function isPrintableName(name: string): boolean {
  return PRINTABLE_NAME.test(name) || isIP(name) !== 0;
}

/** The `--allow-net` value that would admit `host` on `port` (80 and 443 need no port). */
export function grantFor(host: string, port: number | undefined): string {
  const shown = isIP(host) === 6 ? `[${host}]` : host;
  return port === undefined || port === 80 || port === 443 ? shown : `${shown}:${port}`;
}

/** How many distinct refused names a session records before it stops recording new ones. */
const MAX_RECORDED = 1024;

/**
 * Turns refused egress into `egress-denied` events and, once per name per session, one stderr
 * line naming the flag that would allow it. Names come from the sandbox: a name that is not a
 * plain host name is recorded in the trace (JSON-escaped) but never printed.
 */
export class DenialReporter {
  readonly #onEvent: ((event: SandboxEvent) => void) | undefined;
  readonly #logger: Logger;
  readonly #recorded = new Set<string>();
  readonly #hinted = new Set<string>();
  #overflowed = false;

  constructor(onEvent: ((event: SandboxEvent) => void) | undefined, logger: Logger) {
    this.#onEvent = onEvent;
    this.#logger = logger;
  }

  /** A lookup of an ungranted name (`port` unknown) or a refused connection to `host:port`. */
  denied(host: string, port: number | undefined, via: 'dns' | 'proxy' | 'transparent'): void {
    const name = normalizeHost(host);
    const key = `${name}\0${port ?? ''}`;
    if (!this.#recorded.has(key)) {
      if (this.#recorded.size < MAX_RECORDED) {
        this.#recorded.add(key);
        this.#onEvent?.({ type: 'egress-denied', host: name, ...(port === undefined ? {} : { port }), via });
      } else if (!this.#overflowed) {
        this.#overflowed = true;
        this.#onEvent?.({ type: 'egress-denied-overflow', limit: MAX_RECORDED });
      }
    }
    if (this.#hinted.has(name) || this.#hinted.size >= MAX_RECORDED || !isPrintableName(name)) return;
    this.#hinted.add(name);
    const target = port === undefined ? name : `${grantFor(name, undefined)}:${port}`;
    this.#logger.warn(
      `the server tried ${target}, which is not granted; to allow it: --allow-net ${grantFor(name, port)}`,
    );
  }

  /** Watches the proxy's decisions: a CONNECT or request refused as not granted is a denial. */
  observe(event: SandboxEvent): void {
    if (event.type !== 'proxy' || event.decision !== 'deny' || event.reason !== 'not granted') return;
    if (typeof event.host !== 'string' || typeof event.port !== 'number') return;
    this.denied(event.host, event.port, event.method === 'transparent' ? 'transparent' : 'proxy');
  }
}
