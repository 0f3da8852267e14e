/**
 * The little the bridge needs to know about JSON-RPC: is a line JSON, is it a request, a response
 * or a notification, and what is its id, as the exact text the peer sent. Forwarded bytes are never
 * re-serialized; this only looks.
 */

export type MessageKind = 'request' | 'notification' | 'response' | 'batch' | 'invalid' | 'other';

export interface MessageInfo {
  readonly kind: MessageKind;
  readonly method?: string;
  /** Identity of the id for matching a response to its request. */
  readonly idKey?: string;
  /** The id as JSON text, exact even for integers past 2^53. */
  readonly idText?: string;
  /** The parsed message, when the line was JSON. */
  readonly value?: unknown;
}

export function inspectMessage(text: string): MessageInfo {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'invalid' };
  }
  if (Array.isArray(value)) return { kind: 'batch', value };
  if (typeof value !== 'object' || value === null) return { kind: 'other', value };
  const message = value as Record<string, unknown>;
  const method = typeof message.method === 'string' ? message.method : undefined;
  const id = message.id;
  const hasId = typeof id === 'string' || typeof id === 'number';
  if (method !== undefined) {
    if (!hasId) return { kind: 'notification', method, value };
    return { kind: 'request', method, ...identify(id, text), value };
  }
  if (hasId && ('result' in message || 'error' in message))
    return { kind: 'response', ...identify(id, text), value };
  return { kind: 'other', value };
}

/**
 * Classifies a large line from its first and last bytes, without decoding or parsing it all: the
 * kind, method and id of a JSON-RPC message sit at its top level, which writers put at the start
 * (`{"jsonrpc":"2.0","id":1,"result":…`) or at the end (`{"result":…,"jsonrpc":"2.0","id":1}`).
 * A line that does not start with `{` and end with `}` is `invalid`; one that does but is broken
 * inside passes, and the client's own parser rejects it (a server can send any JSON object anyway).
 */
export function inspectLargeLine(content: Buffer): MessageInfo {
  let start = 0;
  let end = content.length;
  while (start < end && isSpaceByte(content[start] as number)) start++;
  while (end > start && isSpaceByte(content[end - 1] as number)) end--;
  if (content[start] !== 0x7b || content[end - 1] !== 0x7d) return { kind: 'invalid' };
  const head = content.toString('utf8', start, Math.min(end, start + LARGE_LINE_HEAD));
  const tail = content.toString('utf8', Math.max(start, end - LARGE_LINE_TAIL), end);
  const methodText = rawTopLevelValue(head, 'method');
  const method = methodText?.startsWith('"') ? parseString(methodText) : undefined;
  const idText = rawTopLevelValue(head, 'id') ?? lastMemberValue(tail, 'id');
  const id = idText === undefined ? undefined : idFromText(idText);
  if (method !== undefined) {
    if (!id) return { kind: 'notification', method };
    return { kind: 'request', method, ...id };
  }
  if (id) return { kind: 'response', ...id };
  return { kind: 'other' };
}

const LARGE_LINE_HEAD = 4096;
const LARGE_LINE_TAIL = 512;

function isSpaceByte(b: number): boolean {
  return b === 32 || b === 9 || b === 10 || b === 13;
}

function parseString(text: string): string | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The same identity `inspectMessage` gives, from the id's source text. */
function idFromText(text: string): { idKey: string; idText: string } | undefined {
  if (text.startsWith('"')) {
    const id = parseString(text);
    return id === undefined ? undefined : identify(id, '');
  }
  if (!/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text)) return undefined;
  const id = Number(text);
  return Number.isSafeInteger(id) || !Number.isInteger(id)
    ? identify(id, '')
    : { idKey: `n:${text}`, idText: text };
}

/** The value of `key` when it is the last member of the top-level object whose end `tail` holds. */
function lastMemberValue(tail: string, key: string): string | undefined {
  const match = /,\s*"([^"\\]*)"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")\s*\}$/.exec(tail);
  return match && match[1] === key ? match[2] : undefined;
}

function identify(id: string | number, text: string): { idKey: string; idText: string } {
  if (typeof id === 'string') return { idKey: `s:${id}`, idText: JSON.stringify(id) };
  // Past 2^53 the parsed number is not the id the peer sent: use the source text instead.
  const exact =
    Number.isSafeInteger(id) || !Number.isInteger(id)
      ? String(id)
      : (rawTopLevelValue(text, 'id') ?? String(id));
  return { idKey: `n:${exact}`, idText: exact };
}

/** The first bytes of a message (an oversize line): the id's text, if it came early enough. */
export function idTextFromHead(head: string): string | undefined {
  const raw = rawTopLevelValue(head, 'id');
  if (raw === undefined) return undefined;
  if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(raw)) return raw;
  if (raw.startsWith('"')) {
    try {
      return typeof JSON.parse(raw) === 'string' ? raw : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Whether the head of a message says it is a request (it has a top-level `method`). */
export function headHasMethod(head: string): boolean {
  return rawTopLevelValue(head, 'method') !== undefined;
}

/**
 * Scans JSON text for a top-level object key and returns the raw text of its scalar value.
 * Tolerates text cut short (the head of an oversize line).
 */
export function rawTopLevelValue(text: string, key: string): string | undefined {
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return undefined;
  i++;
  for (;;) {
    i = skipSpace(text, i);
    if (text[i] !== '"') return undefined;
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return undefined;
    const name = text.slice(i + 1, keyEnd - 1);
    i = skipSpace(text, keyEnd);
    if (text[i] !== ':') return undefined;
    i = skipSpace(text, i + 1);
    const valueEnd = valueEndAt(text, i);
    if (valueEnd < 0) return undefined;
    if (name === key) return text.slice(i, valueEnd);
    i = skipSpace(text, valueEnd);
    if (text[i] !== ',') return undefined;
    i++;
  }
}

function skipSpace(text: string, i: number): number {
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 10 && c !== 13) break;
    i++;
  }
  return i;
}

/** Index just past the string starting at `i` (a quote), or -1 if cut. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 92) j++;
    else if (c === 34) return j + 1;
  }
  return -1;
}

/** Index just past the JSON value starting at `i`, or -1 if cut. */
function valueEndAt(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return stringEnd(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text.charCodeAt(j);
      if (d === 34) {
        j = stringEnd(text, j) - 1;
        if (j < 0) return -1;
      } else if (d === 123 || d === 91) depth++;
      else if (d === 125 || d === 93) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < text.length && !/[\s,}\]]/.test(text[j] as string)) j++;
  return j === text.length ? -1 : j;
}

/** JSON-RPC error codes the bridge itself answers with. */
export const BridgeErrorCode = {
  /** The server ended, or never started, before answering. */
  serverUnavailable: -32000,
  /** The message was larger than the bridge's line limit. */
  messageTooLarge: -32001,
  /** The session's TTL elapsed before the server answered. */
  ttlExpired: -32002,
  /** The tool is hidden or refused by the session's policy (`--allow-tool`, `--deny-tool`, pins). */
  policyDenied: -32003,
} as const;

/** A JSON-RPC error response, as one line, for the request whose id text is given. */
export function errorResponseLine(idText: string, code: number, message: string): Buffer {
  return Buffer.from(
    `{"jsonrpc":"2.0","id":${idText},"error":{"code":${code},"message":${JSON.stringify(message)}}}\n`,
  );
}
