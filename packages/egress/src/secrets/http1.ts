/**
 * A strict HTTP/1.1 request reader for the TLS the proxy terminates for a bound host. The bytes
 * are the sandbox's: anything two parsers could read two ways is refused, never repaired, since
 * the request the policy checks must be the one the upstream reads (RFC 9112 §6.3, §11.2).
 */

export interface RequestHead {
  readonly method: string;
  /** Origin-form only (`/path?query`). */
  readonly target: string;
  /** Names as sent, in order; values with no surrounding whitespace. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

export type ReadResult =
  | { readonly kind: 'more' }
  | { readonly kind: 'bad'; readonly reason: string }
  | {
      readonly kind: 'request';
      readonly head: RequestHead;
      readonly body: Buffer;
      /** Bytes of `input` this request used; what follows is the next request. */
      readonly used: number;
    };

export const MAX_HEAD_BYTES = 64 * 1024;
export const MAX_BODY_BYTES = 8 * 1024 * 1024;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const TARGET = /^\/[\x21-\x7e]*$/;
const VALUE = /^[\t\x20-\x7e]*$/;

/** Reads one whole request from the front of `input`: its head and its de-chunked body. */
export function readRequest(input: Buffer): ReadResult {
  const end = input.indexOf('\r\n\r\n');
  if (end === -1) {
    if (input.length > MAX_HEAD_BYTES) return bad('request head too large');
    return badBytes(input) ?? { kind: 'more' };
  }
  if (end + 4 > MAX_HEAD_BYTES) return bad('request head too large');
  const headText = input.subarray(0, end).toString('latin1');
  const head = parseHead(headText);
  if ('reason' in head) return bad(head.reason);
  const framing = bodyFraming(head.headers);
  if ('reason' in framing) return bad(framing.reason);
  const start = end + 4;
  if (framing.kind === 'length') {
    if (framing.length > MAX_BODY_BYTES) return bad('request body too large');
    if (input.length < start + framing.length) return { kind: 'more' };
    return {
      kind: 'request',
      head,
      body: input.subarray(start, start + framing.length),
      used: start + framing.length,
    };
  }
  const chunked = readChunked(input, start);
  if (chunked.kind !== 'done') return chunked;
  return { kind: 'request', head, body: chunked.body, used: chunked.used };
}

/** A bare CR or LF, a NUL or other control byte in an unfinished head: refused before it grows. */
function badBytes(input: Buffer): ReadResult | undefined {
  const text = input.toString('latin1');
  return /[^\t\r\n\x20-\x7e]/.test(text) || /\r(?!\n|$)|(?<!\r)\n/.test(text)
    ? bad('malformed request head')
    : undefined;
}

function parseHead(text: string): RequestHead | { reason: string } {
  // Every line ends with CRLF: a bare CR or LF, or any control byte, is refused.
  if (/[^\t\r\n\x20-\x7e]/.test(text) || /\r(?!\n)|(?<!\r)\n/.test(text))
    return { reason: 'malformed request head' };
  const lines = text.split('\r\n');
  const requestLine = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\S+) HTTP\/1\.1$/.exec(lines[0] ?? '');
  if (!requestLine) return { reason: 'malformed request line (HTTP/1.1 only)' };
  const method = requestLine[1]!;
  const target = requestLine[2]!;
  if (method === 'CONNECT' || !TARGET.test(target))
    return { reason: 'request target must be a path (origin-form)' };
  const headers: Array<[string, string]> = [];
  for (const line of lines.slice(1)) {
    if (line.startsWith(' ') || line.startsWith('\t')) return { reason: 'obsolete line folding' };
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (!TOKEN.test(name) || !VALUE.test(value)) return { reason: 'malformed header' };
    headers.push([name, value]);
  }
  return { method, target, headers };
}

type Framing = { kind: 'length'; length: number } | { kind: 'chunked' } | { reason: string };

function bodyFraming(headers: RequestHead['headers']): Framing {
  const lengths = headers.filter(([name]) => name.toLowerCase() === 'content-length');
  const encodings = headers.filter(([name]) => name.toLowerCase() === 'transfer-encoding');
  if (lengths.length > 0 && encodings.length > 0)
    return { reason: 'both Transfer-Encoding and Content-Length' };
  if (lengths.length > 1) return { reason: 'more than one Content-Length' };
  if (encodings.length > 1) return { reason: 'more than one Transfer-Encoding' };
  if (encodings.length === 1) {
    if (encodings[0]![1].toLowerCase() !== 'chunked')
      return { reason: 'Transfer-Encoding other than chunked' };
    return { kind: 'chunked' };
  }
  if (lengths.length === 1) {
    const text = lengths[0]![1];
    if (!/^\d{1,10}$/.test(text)) return { reason: 'malformed Content-Length' };
    return { kind: 'length', length: Number(text) };
  }
  return { kind: 'length', length: 0 };
}

type Chunked =
  | { kind: 'done'; body: Buffer; used: number }
  | { kind: 'more' }
  | { kind: 'bad'; reason: string };

/** `size CRLF data CRLF … 0 CRLF CRLF`: no extensions, no trailers, sizes in plain hex. */
function readChunked(input: Buffer, start: number): Chunked {
  const parts: Buffer[] = [];
  let total = 0;
  let at = start;
  for (;;) {
    const lineEnd = input.indexOf('\r\n', at);
    if (lineEnd === -1) return input.length - at > 18 ? bad('malformed chunk size') : { kind: 'more' };
    const sizeText = input.subarray(at, lineEnd).toString('latin1');
    if (!/^[0-9A-Fa-f]{1,8}$/.test(sizeText)) return bad('malformed chunk size');
    const size = Number.parseInt(sizeText, 16);
    total += size;
    if (total > MAX_BODY_BYTES) return bad('request body too large');
    const dataStart = lineEnd + 2;
    if (size === 0) {
      if (input.length < dataStart + 2) return { kind: 'more' };
      if (input[dataStart] !== 0x0d || input[dataStart + 1] !== 0x0a)
        return bad('chunk trailers are not accepted');
      return { kind: 'done', body: Buffer.concat(parts), used: dataStart + 2 };
    }
    if (input.length < dataStart + size + 2) return { kind: 'more' };
    if (input[dataStart + size] !== 0x0d || input[dataStart + size + 1] !== 0x0a)
      return bad('malformed chunk');
    parts.push(input.subarray(dataStart, dataStart + size));
    at = dataStart + size + 2;
  }
}

function bad(reason: string): { kind: 'bad'; reason: string } {
  return { kind: 'bad', reason };
}
