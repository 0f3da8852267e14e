import type { SandboxEvent } from './contract.js';

/**
 * A connection to a granted host that the host side could not make: the name did not resolve
 * here, the address refused or timed out, TLS failed. Backends report it through `onEvent`, so it
 * is traced as `sandbox.egress-failed`; the sandbox saw only a closed connection or a 502, so
 * this record (and one stderr line) is where the user learns why.
 *
 * A backend writes it for a failure after its grants let the attempt through; a granted name that
 * does not resolve may instead be a `proxy` deny whose reason starts with `cannot resolve`, and
 * the summary counts both as failed.
 */
export interface EgressFailedEvent extends SandboxEvent {
  readonly type: 'egress-failed';
  /** The granted host name or IP literal, as the backend parsed it (never the sandbox's raw text). */
  readonly host: string;
  readonly port?: number;
  /** How the attempt came: `proxy` (HTTP_PROXY), `transparent` (a synthetic address) or `dns`. */
  readonly via?: 'proxy' | 'transparent' | 'dns';
  /** Short and from the host side: an error code (`ENOTFOUND`, `ECONNREFUSED`), `TLS: …`. */
  readonly reason: string;
}

/** What became of one host's egress in a session. */
export interface EgressStats {
  /** Attempts the grants let through (one that then failed is counted in `failed` too). */
  allowed: number;
  /** Attempts refused: not granted, or an address rule; a refused DNS lookup counts once a name. */
  denied: number;
  /** Attempts to a granted host that did not get through from this host. */
  failed: number;
  /** Why attempts were denied or failed, each reason once, in the order first seen. */
  reasons: string[];
}

/** The key for refusals of names that did not parse (their bytes are never recorded). */
export const INVALID_HOST_KEY = '(invalid host name)';
const MAX_REASONS = 4;
const MAX_REASON_LENGTH = 200;

/** Tallies the `sandbox.proxy`, `sandbox.egress-denied` and `sandbox.egress-failed` records. */
export class EgressTally {
  readonly #hosts = new Map<string, EgressStats>();

  /** Takes one trace record; anything that is not an egress record is ignored. */
  add(record: { readonly type: string; readonly [field: string]: unknown }): void {
    const reason = typeof record.reason === 'string' ? record.reason : undefined;
    switch (record.type) {
      case 'sandbox.proxy':
        if (record.decision === 'allow') this.#count(record.host, 'allowed');
        else if (record.decision === 'bad-upstream') this.#count(record.host, 'failed', reason);
        else if (record.decision === 'deny') {
          // A granted name the host could not resolve is a failure of the host side, not a refusal.
          const failed = reason?.startsWith('cannot resolve') === true;
          this.#count(record.host, failed ? 'failed' : 'denied', reason);
        }
        break;
      case 'sandbox.egress-denied':
        // Refusals by the proxy are its `proxy` records already; only DNS ones are new here.
        if (record.via === 'dns') this.#count(record.host, 'denied', reason ?? 'not granted (DNS lookup)');
        break;
      case 'sandbox.egress-failed':
        this.#count(record.host, 'failed', reason ?? 'unreachable');
        break;
    }
  }

  /** Per host, in the order first seen. A plain object with no prototype keys to collide with. */
  result(): Record<string, EgressStats> {
    return Object.fromEntries(this.#hosts);
  }

  #count(host: unknown, outcome: 'allowed' | 'denied' | 'failed', reason?: string): void {
    const key = typeof host === 'string' && host !== '' ? host : INVALID_HOST_KEY;
    let stats = this.#hosts.get(key);
    if (!stats) {
      stats = { allowed: 0, denied: 0, failed: 0, reasons: [] };
      this.#hosts.set(key, stats);
    }
    stats[outcome]++;
    if (reason === undefined || outcome === 'allowed') return;
    const short = reason.slice(0, MAX_REASON_LENGTH);
    if (stats.reasons.length < MAX_REASONS && !stats.reasons.includes(short)) stats.reasons.push(short);
  }
}
