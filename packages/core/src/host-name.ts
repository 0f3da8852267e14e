import { isIP } from 'node:net';

/**
 * Host names and IP literals as the host side uses them. A host arrives from the sandbox (a DNS
 * question, a CONNECT authority, a proxy URL), from a trace read back, or from the user's flags;
 * it is parsed once, here, and only the branded value is used afterwards: for a grant decision,
 * for `dns.lookup`, in a header, a message or a suggested flag. Anything that is not a plain name
 * or an IP literal is refused, never repaired: a NUL, a space, a `;`, a non-ASCII byte.
 */

declare const HOST_NAME: unique symbol;
declare const IP_LITERAL: unique symbol;

/** A DNS name of LDH labels (IDNA A-labels included), lower case, no trailing dot. */
export type HostName = string & { readonly [HOST_NAME]: true };
/** An IPv4 dotted quad or an IPv6 address (no brackets, no zone), lower case. */
export type IpLiteral = string & { readonly [IP_LITERAL]: true };

export type Host =
  | { readonly kind: 'name'; readonly value: HostName }
  | { readonly kind: 'ip'; readonly value: IpLiteral; readonly family: 4 | 6 };

const MAX_NAME = 253;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
// A last label a resolver reads as a number (`127.1`, `0x7f.1`): getaddrinfo would take it as IPv4.
const NUMERIC_LABEL = /^(\d+|0x[0-9a-f]*)$/;

/**
 * A host name, or undefined when `text` is not one: ASCII letters, digits and `-` in labels of
 * 1–63 characters that neither start nor end with `-`, at most 253 characters, one trailing dot
 * allowed (and dropped), a last label that is not a number. Upper case is lowered.
 */
export function parseHostName(text: string): HostName | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_NAME + 1) return undefined;
  // ASCII before lowering: `toLowerCase` maps some non-ASCII letters (U+212A, Kelvin) onto ASCII.
  if (!/^[A-Za-z0-9.-]+$/.test(text)) return undefined;
  const lower = text.toLowerCase();
  const name = lower.endsWith('.') ? lower.slice(0, -1) : lower;
  if (name.length === 0 || name.length > MAX_NAME) return undefined;
  const labels = name.split('.');
  if (!labels.every((label) => LABEL.test(label))) return undefined;
  if (NUMERIC_LABEL.test(labels[labels.length - 1] ?? '')) return undefined;
  return name as HostName;
}

/**
 * An IP literal, or undefined: a dotted quad without leading zeros, or an IPv6 address (brackets
 * allowed and dropped, a zone `%…` refused). Upper case is lowered.
 */
export function parseIpLiteral(text: string): IpLiteral | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > 47) return undefined;
  if (!/^[0-9A-Fa-f:.[\]]+$/.test(text)) return undefined;
  const lower = text.toLowerCase();
  const bracketed = lower.startsWith('[') && lower.endsWith(']');
  const bare = bracketed ? lower.slice(1, -1) : lower;
  if (!bracketed && IPV4.test(bare)) return bare as IpLiteral;
  if (/^[0-9a-f:.]+$/.test(bare) && bare.includes(':') && isIP(bare) === 6) return bare as IpLiteral;
  return undefined;
}

/** A host name or an IP literal; undefined when `text` is neither. */
export function parseHost(text: string): Host | undefined {
  const ip = parseIpLiteral(text);
  if (ip !== undefined) return { kind: 'ip', value: ip, family: ip.includes(':') ? 6 : 4 };
  const name = parseHostName(text);
  return name === undefined ? undefined : { kind: 'name', value: name };
}

/** `host` as it is written in a URL authority or a flag: IPv6 in brackets. */
export function hostText(host: Host): string {
  return host.kind === 'ip' && host.family === 6 ? `[${host.value}]` : host.value;
}

/**
 * The value of a suggested `--allow-net`/`--install-allow-net` flag that admits `host` on `port`
 * (80 and 443 need no port: a grant without one covers every port). Built from validated parts
 * only, so it holds nothing a shell or a terminal interprets and needs no quoting.
 */
export function grantFlagValue(host: Host, port?: number): string {
  const shown = hostText(host);
  const portless = port === undefined || port === 80 || port === 443;
  if (portless || !Number.isInteger(port) || port < 1 || port > 65535) return shown;
  return `${shown}:${port}`;
}
