import { validateHeaderName, validateHeaderValue } from 'node:http';
import { type Host, parseHost } from '@mcpsandbox/core';
import { INVALID_HOST } from './egress.js';

/**
 * The proxy's parsing of what crosses it, as pure functions: each takes bytes an attacker chose
 * (the sandbox's request, a granted upstream's reply), never throws, and either returns what may be
 * forwarded, every header checked as Node's HTTP writer checks it, or says why nothing is.
 */

export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

/** A flat `[name, value, name, value, …]` list, as `rawHeaders` and `writeHead` use it. */
export type RawHeaders = readonly string[];

export interface ProxyTarget {
  readonly host: Host;
  readonly port: number;
  /** Path and query, as sent upstream. */
  readonly path: string;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** The target of a plain-HTTP proxy request: an absolute `http://` URL with a host and a valid port. */
export function parseProxyUrl(text: unknown): Parsed<ProxyTarget> {
  if (typeof text !== 'string') return fail('no request target');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail('the proxy takes absolute http:// URLs or CONNECT');
  }
  if (url.protocol !== 'http:') return fail('only http:// URLs are forwarded; use CONNECT for https');
  if (url.hostname.length === 0) return fail('no host in the URL');
  // WHATWG keeps `;`, `{`, `,` and more in a host: only a plain name or an IP literal goes on.
  const host = parseHost(url.hostname);
  if (host === undefined) return fail(INVALID_HOST);
  const port = url.port ? Number(url.port) : 80;
  if (!Number.isInteger(port) || port < 1 || port > 65535) return fail('bad port in the URL');
  const path = `${url.pathname}${url.search}`;
  // WHATWG serialization percent-encodes; anything outside visible ASCII left means a bad request.
  if (!/^\/[\x21-\x7e]*$/.test(path)) return fail('bad path in the URL');
  return { ok: true, value: { host, port, path } };
}

/** The `host:port` of a CONNECT request; IPv6 in brackets. */
export function parseAuthority(text: unknown): Parsed<{ host: Host; port: number }> {
  if (typeof text !== 'string') return fail('no CONNECT target');
  const match = /^(\[[^\]]*\]|[^:[\]]*):(\d{1,5})$/.exec(text);
  if (!match) return fail('bad CONNECT target');
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return fail('bad CONNECT port');
  const host = parseHost(match[1]!);
  if (host === undefined) return fail(INVALID_HOST);
  return { ok: true, value: { host, port } };
}

/**
 * The sandbox's request headers as they go upstream: hop-by-hop headers (and those `Connection`
 * names) dropped, every other one checked; a header Node's writer would refuse fails the request.
 */
export function forwardRequestHeaders(raw: unknown): Parsed<RawHeaders> {
  return endToEnd(raw, 'request');
}

/**
 * A granted upstream's reply as the proxy answers the sandbox with it: the status code only if it
 * is a final one (200–599) and its status text is well-formed (the text itself is never copied),
 * and its end-to-end headers only if every one of them is well-formed. Anything else is a bad gateway.
 */
export function upstreamReply(
  statusCode: unknown,
  statusText: unknown,
  raw: unknown,
): Parsed<{ status: number; headers: RawHeaders }> {
  if (
    typeof statusCode !== 'number' ||
    !Number.isInteger(statusCode) ||
    statusCode < 200 ||
    statusCode > 599
  ) {
    return fail('the upstream answered with a status code the proxy does not forward');
  }
  // reason-phrase = *( HTAB / SP / VCHAR / obs-text ) (RFC 9112); checked, then not used.
  if (typeof statusText !== 'string' || /[^\t\x20-\x7e\x80-\xff]/.test(statusText)) {
    return fail('malformed status line');
  }
  const headers = endToEnd(raw, 'reply');
  if (!headers.ok) return headers;
  return { ok: true, value: { status: statusCode, headers: headers.value } };
}

function endToEnd(raw: unknown, what: string): Parsed<RawHeaders> {
  if (!Array.isArray(raw) || raw.length % 2 !== 0) return fail(`malformed ${what} headers`);
  const dropped = new Set(HOP_BY_HOP);
  for (let i = 0; i < raw.length; i += 2) {
    if (
      typeof raw[i] === 'string' &&
      raw[i].toLowerCase() === 'connection' &&
      typeof raw[i + 1] === 'string'
    ) {
      for (const token of (raw[i + 1] as string).split(',')) dropped.add(token.trim().toLowerCase());
    }
  }
  const kept: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name: unknown = raw[i];
    const value: unknown = raw[i + 1];
    if (typeof name !== 'string' || typeof value !== 'string') return fail(`malformed ${what} headers`);
    if (!isHeaderName(name) || !isHeaderValue(name, value)) return fail(`malformed ${what} header`);
    if (dropped.has(name.toLowerCase())) continue;
    kept.push(name, value);
  }
  return { ok: true, value: kept };
}

function isHeaderName(name: string): boolean {
  try {
    validateHeaderName(name);
    return true;
  } catch {
    return false;
  }
}

function isHeaderValue(name: string, value: string): boolean {
  try {
    validateHeaderValue(name, value);
    // Node's check allows obs-text (0x80–0xff) but a JavaScript string can hold more: refuse it.
    return !/[^\t\x20-\x7e\x80-\xff]/.test(value);
  } catch {
    return false;
  }
}

function fail(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}
