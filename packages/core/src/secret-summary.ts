/**
 * What became of each `--secret` in a session, from the `sandbox.secret-*` records the egress
 * proxy writes: where the real value went (host, method, path; never the value), where the
 * stand-in turned up unreplaced, and the replies and connections cut off for its sake.
 */
import { parseHostName } from './host-name.js';

export interface SecretStats {
  /** Requests the real value was put into, by host. */
  substituted: Record<string, number>;
  /** Distinct `METHOD host path` of those requests, in the order first seen (at most MAX_REQUESTS). */
  requests: string[];
  /** The stand-in seen where it is not replaced, by place (`header`, `body`, `dns`, `plain-http`, …). */
  misuse: Record<string, number>;
  /** Replies cut off because they carried the real value. */
  repliesCut: number;
}

/** Connections to a bound host that ended before any value was put on the wire. */
export interface BoundHostTrouble {
  /** TLS with the session CA did not complete (a pinned certificate, mTLS, not TLS). */
  tlsFailed: number;
  /** Requests refused by the strict reader (smuggling shapes, a Host of another name). */
  refused: number;
  /** Replies cut off without a secret named (compressed, so not searchable). */
  repliesCut: number;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const METHOD = /^[A-Z]{1,16}$/;
const WHERE = new Set(['header', 'body', 'dns', 'plain-http', 'connect-target']);
const MAX_REQUESTS = 10;
const MAX_PATH = 120;
const UNNAMED_HOST = '(invalid host name)';

/** Tallies the `sandbox.secret-*` records; read back from a file, only validated fields are kept. */
export class SecretTally {
  readonly #secrets = new Map<string, SecretStats>();
  readonly #hosts = new Map<string, BoundHostTrouble>();

  add(record: { readonly type: string; readonly [field: string]: unknown }): void {
    if (!record.type.startsWith('sandbox.secret-')) return;
    const name = typeof record.name === 'string' && NAME.test(record.name) ? record.name : undefined;
    const host = hostOf(record.host);
    switch (record.type) {
      case 'sandbox.secret-substituted': {
        if (!name || !host) return;
        const stats = this.#stats(name);
        stats.substituted[host] = (stats.substituted[host] ?? 0) + 1;
        const method = typeof record.method === 'string' && METHOD.test(record.method) ? record.method : '?';
        const request = `${method} ${host} ${pathOf(record.path)}`;
        if (stats.requests.length < MAX_REQUESTS && !stats.requests.includes(request))
          stats.requests.push(request);
        break;
      }
      case 'sandbox.secret-misuse': {
        if (!name) return;
        const where =
          typeof record.where === 'string' && WHERE.has(record.where) ? record.where : 'elsewhere';
        const key = host && (where === 'header' || where === 'body') ? `${where} to ${host}` : where;
        const stats = this.#stats(name);
        stats.misuse[key] = (stats.misuse[key] ?? 0) + 1;
        break;
      }
      case 'sandbox.secret-reply-cut':
        if (name) this.#stats(name).repliesCut++;
        else if (host) this.#trouble(host).repliesCut++;
        break;
      case 'sandbox.secret-tls-failed':
        this.#trouble(host ?? UNNAMED_HOST).tlsFailed++;
        break;
      case 'sandbox.secret-request-refused':
        this.#trouble(host ?? UNNAMED_HOST).refused++;
        break;
    }
  }

  /** Per secret name, in the order first seen. Objects with no prototype keys to collide with. */
  result(): { secrets: Record<string, SecretStats>; boundHosts: Record<string, BoundHostTrouble> } {
    return { secrets: Object.fromEntries(this.#secrets), boundHosts: Object.fromEntries(this.#hosts) };
  }

  #stats(name: string): SecretStats {
    let stats = this.#secrets.get(name);
    if (!stats) {
      stats = { substituted: {}, requests: [], misuse: {}, repliesCut: 0 };
      this.#secrets.set(name, stats);
    }
    return stats;
  }

  #trouble(host: string): BoundHostTrouble {
    let trouble = this.#hosts.get(host);
    if (!trouble) {
      trouble = { tlsFailed: 0, refused: 0, repliesCut: 0 };
      this.#hosts.set(host, trouble);
    }
    return trouble;
  }
}

function hostOf(value: unknown): string | undefined {
  return typeof value === 'string' ? parseHostName(value) : undefined;
}

/** A request path as recorded (the sandbox's, before substitution), printable and bounded. */
function pathOf(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/')) return '?';
  const printable = value.replace(/[^\x21-\x7e]/g, '?');
  return printable.length > MAX_PATH ? `${printable.slice(0, MAX_PATH)}…` : printable;
}
