import {
  grantFlagValue,
  type Host,
  type HostName,
  hostText,
  type Logger,
  parseHost,
  parseIpLiteral,
  type SandboxEvent,
} from '@mcpsandbox/core';
import { addressRefusal, hostAddresses } from './addresses.js';
import { matchGrant, type NetGrant } from './grants.js';

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
  readonly #byName = new Map<HostName, string>();
  readonly #byAddress = new Map<string, HostName>();
  #next = FIRST_HOST;

  /** The address for `name`, allocating one; undefined once the block is used up. */
  addressFor(name: HostName): string | undefined {
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
  nameOf(address: string): HostName | undefined {
    return this.#byAddress.get(address.startsWith('::ffff:') ? address.slice(7) : address);
  }
}

/** True when some grant admits `name` on some port (an IP grant never covers a name). */
export function nameIsGranted(grants: readonly NetGrant[], name: HostName): boolean {
  const host: Host = { kind: 'name', value: name };
  return grants.some((grant) => grant.kind !== 'ip' && matchGrant([{ ...grant, port: undefined }], host, 0));
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

/** Why a host the sandbox named was refused before any grant was looked at. */
export const INVALID_HOST = 'invalid host name';

/** What an `egress-failed` reason may say: an errno-style code, or the proxy's own timeout. */
const FAILURE_CODE = /^[A-Z][A-Z0-9_]{1,31}$/;
export const CONNECT_TIMEOUT = 'ETIMEDOUT';

/**
 * The reason recorded for a connection to a checked address that failed: the error's code when it
 * looks like one (libuv's `ECONNREFUSED`, `EHOSTUNREACH`), else a fixed word. Never its message.
 */
export function failureCode(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && FAILURE_CODE.test(code) ? code : 'ECONNFAILED';
}

/** `resolves to <ip> (<rule>); …`, as `decide` words a granted name that points somewhere refused. */
const REFUSED_ADDRESS = /^resolves to (\S+) \(/;

/** How many distinct refused names a session records before it stops recording new ones. */
const MAX_RECORDED = 1024;

/**
 * Turns refused egress into `egress-denied` events and, once per name per session, one stderr
 * line naming the flag that would allow it. Names come from the sandbox and arrive parsed: the
 * flag is built from the validated host only. A name that did not parse is recorded as refused,
 * without its bytes, and said once, with no flag.
 */
export class DenialReporter {
  readonly #onEvent: ((event: SandboxEvent) => void) | undefined;
  readonly #logger: Logger;
  readonly #recorded = new Set<string>();
  readonly #hinted = new Set<string>();
  readonly #invalidVia = new Set<string>();
  readonly #unreachable = new Set<string>();
  #overflowed = false;

  constructor(onEvent: ((event: SandboxEvent) => void) | undefined, logger: Logger) {
    this.#onEvent = onEvent;
    this.#logger = logger;
  }

  /** A lookup of an ungranted name (`port` unknown) or a refused connection to `host:port`. */
  denied(host: Host, port: number | undefined, via: 'dns' | 'proxy' | 'transparent'): void {
    const key = `${host.value} ${port ?? ''}`;
    if (!this.#recorded.has(key)) {
      if (this.#recorded.size < MAX_RECORDED) {
        this.#recorded.add(key);
        this.#onEvent?.({
          type: 'egress-denied',
          host: host.value,
          ...(port === undefined ? {} : { port }),
          via,
        });
      } else if (!this.#overflowed) {
        this.#overflowed = true;
        this.#onEvent?.({ type: 'egress-denied-overflow', limit: MAX_RECORDED });
      }
    }
    if (this.#hinted.has(host.value) || this.#hinted.size >= MAX_RECORDED) return;
    this.#hinted.add(host.value);
    const target = port === undefined ? hostText(host) : `${hostText(host)}:${port}`;
    this.#logger.warn(
      `the server tried ${target}, which is not granted; to allow it: --allow-net ${grantFlagValue(host, port)}`,
    );
  }

  /** A name that is not a valid host name: refused as it came in, once said, no flag to suggest. */
  invalid(via: 'dns' | 'proxy' | 'transparent'): void {
    if (this.#invalidVia.has(via)) return;
    this.#invalidVia.add(via);
    this.#onEvent?.({ type: 'egress-denied', via, reason: INVALID_HOST });
    this.#logger.warn(
      `the server asked ${via === 'dns' ? 'DNS' : 'the proxy'} for a host name that is not a valid DNS name ` +
        '(refused; no --allow-net flag can grant it)',
    );
  }

  /**
   * A granted host this host could not reach: said once per host on stderr, since the sandbox saw
   * only a closed connection or a 502. `reason` is one of this module's fixed phrasings, built
   * from an error code or an address rule, never from text the sandbox or a server chose.
   */
  unreachable(host: Host, reason: string): void {
    if (this.#unreachable.has(host.value) || this.#unreachable.size >= MAX_RECORDED) return;
    this.#unreachable.add(host.value);
    this.#logger.warn(`${hostText(host)} is granted but unreachable from this host: ${reason}`);
  }

  /**
   * Watches the proxy's decisions and failures: a CONNECT or request refused as not granted is a
   * denial; a granted host that did not resolve, resolved to a refused address, or did not answer
   * is said once as unreachable.
   */
  observe(event: SandboxEvent): void {
    if (event.type === 'egress-failed') {
      this.#failed(event);
      return;
    }
    if (event.type !== 'proxy' || event.decision !== 'deny') return;
    const via = event.method === 'transparent' ? 'transparent' : 'proxy';
    if (event.reason === INVALID_HOST) {
      this.invalid(via);
      return;
    }
    if (typeof event.port !== 'number') return;
    // The proxy's events carry the host it parsed; parsed again here, as everything read back is.
    const host = typeof event.host === 'string' ? parseHost(event.host) : undefined;
    if (event.reason === 'not granted') {
      if (host === undefined) this.invalid(via);
      else this.denied(host, event.port, via);
      return;
    }
    if (host === undefined || typeof event.reason !== 'string') return;
    const why = unreachableReason(event.reason);
    if (why !== undefined) this.unreachable(host, why);
  }

  #failed(event: SandboxEvent): void {
    const host = typeof event.host === 'string' ? parseHost(event.host) : undefined;
    const code =
      typeof event.reason === 'string' && FAILURE_CODE.test(event.reason) ? event.reason : undefined;
    if (host === undefined || code === undefined) return;
    const port = typeof event.port === 'number' ? ` port ${event.port}` : '';
    this.unreachable(host, `connecting to it${port} failed: ${code}`);
  }
}

/**
 * The stderr phrasing of a deny that is the host side's failure, not the grants': a name that did
 * not resolve (`cannot resolve: ENOTFOUND`), or one that resolves to an address the rules refuse.
 * Rebuilt from the parsed code or address; undefined for every other reason.
 */
function unreachableReason(reason: string): string | undefined {
  if (reason.startsWith('cannot resolve: ')) {
    const code = reason.slice('cannot resolve: '.length);
    if (code === 'no address') return 'it does not resolve here (no address)';
    return FAILURE_CODE.test(code) ? `it does not resolve here (${code})` : 'it does not resolve here';
  }
  const refused = REFUSED_ADDRESS.exec(reason);
  const ip = refused ? parseIpLiteral(refused[1]!) : undefined;
  if (ip === undefined) return undefined;
  const rule = addressRefusal(ip, hostAddresses()) ?? 'an address rule';
  const shown = ip.includes(':') ? `[${ip}]` : ip;
  return (
    `it resolves to ${shown}, which is refused (${rule}); ` +
    `if you mean that address, grant it explicitly: --allow-net ${shown}`
  );
}
