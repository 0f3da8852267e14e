import { isUtf8 } from 'node:buffer';

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
  /**
   * Set by `inspectLargeLine` only: whether its reading is the one `JSON.parse` gives (for a line
   * that is valid JSON). A reading from the ends of a line cannot see a second `id` in the middle.
   */
  readonly certain?: boolean;
}

export function inspectMessage(text: string): MessageInfo {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'invalid' };
  }
  return classifyValue(value, text);
}

function classifyValue(value: unknown, text: string): MessageInfo {
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
  if (hasId && (Object.hasOwn(message, 'result') || Object.hasOwn(message, 'error')))
    return { kind: 'response', ...identify(id, text), value };
  return { kind: 'other', value };
}

/**
 * Classifies a large line from its first and last bytes, without decoding or parsing it all: the
 * kind, method and id of a JSON-RPC message sit at its top level, which writers put at the start
 * (`{"jsonrpc":"2.0","id":1,"result":…`) or at the end (`{"result":…,"jsonrpc":"2.0","id":1}`).
 * A line that does not start with `{` and end with `}` is `invalid`; one that does but is broken
 * inside passes, and the client's own parser rejects it (a server can send any JSON object anyway).
 * `certain` says whether the whole top level was read; only then is this `JSON.parse`'s reading
 * (for valid JSON). The bridge uses this reading only when no policy depends on it.
 */
export function inspectLargeLine(content: Buffer): MessageInfo {
  let start = 0;
  let end = content.length;
  while (start < end && isSpaceByte(content[start] as number)) start++;
  while (end > start && isSpaceByte(content[end - 1] as number)) end--;
  if (content[start] !== 0x7b || content[end - 1] !== 0x7d) return { kind: 'invalid', certain: false };
  const head = content.toString('utf8', start, Math.min(end, start + LARGE_LINE_HEAD));
  const scan = topLevelMembers(head);
  const complete = scan.complete && end - start <= LARGE_LINE_HEAD;
  const last = (key: string) => scan.members.findLast((m) => m.key === key)?.raw;
  const methodText = last('method');
  const method = methodText?.startsWith('"') ? parseString(methodText) : undefined;
  let idText = last('id');
  if (idText === undefined && !complete) {
    const tail = content.toString('utf8', Math.max(start, end - LARGE_LINE_TAIL), end);
    idText = lastMemberValue(tail, 'id');
  }
  const id = idText === undefined ? undefined : idFromText(idText);
  const certain = complete && !scan.escapedKey && unique(scan.members);
  if (method !== undefined) {
    if (!id) return { kind: 'notification', method, certain };
    return { kind: 'request', method, ...id, certain };
  }
  const answers = !complete || scan.members.some((m) => m.key === 'result' || m.key === 'error');
  if (id && answers) return { kind: 'response', ...id, certain };
  return { kind: 'other', certain };
}

const LARGE_LINE_HEAD = 4096;
const LARGE_LINE_TAIL = 512;
const KEYS_THAT_CLASSIFY = new Set(['id', 'method', 'result', 'error']);

/** No key that decides a message's kind or id appears twice. */
function unique(members: readonly { key: string }[]): boolean {
  const seen = new Set<string>();
  for (const { key } of members) {
    if (!KEYS_THAT_CLASSIFY.has(key)) continue;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

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

const NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/** The same identity `inspectMessage` gives, from the id's source text. */
function idFromText(text: string): { idKey: string; idText: string } | undefined {
  if (text.startsWith('"')) {
    const id = parseString(text);
    return id === undefined ? undefined : identify(id, '');
  }
  if (!NUMBER.test(text)) return undefined;
  return identify(Number(text), '', text);
}

/** The value of `key` when it is the last member of the top-level object whose end `tail` holds. */
function lastMemberValue(tail: string, key: string): string | undefined {
  const match = /,\s*"([^"\\]*)"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")\s*\}$/.exec(tail);
  return match && match[1] === key ? match[2] : undefined;
}

function identify(id: string | number, text: string, raw?: string): { idKey: string; idText: string } {
  if (typeof id === 'string') return { idKey: `s:${id}`, idText: JSON.stringify(id) };
  // Past 2^53 (or past the largest double: 1e400 parses to Infinity, which is not JSON) the parsed
  // number is not the id the peer sent: use the source text instead.
  const lossless = Number.isFinite(id) && (Number.isSafeInteger(id) || !Number.isInteger(id));
  const exact = lossless ? String(id) : (raw ?? rawTopLevelValue(text, 'id') ?? String(id));
  return { idKey: `n:${exact}`, idText: exact };
}

/** The first bytes of a message (an oversize line): the id's text, if it came early enough. */
export function idTextFromHead(head: string): string | undefined {
  const raw = rawTopLevelValue(head, 'id');
  if (raw === undefined) return undefined;
  if (NUMBER.test(raw)) return raw;
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
 * Scans JSON text for a top-level object key and returns the raw text of its value: the last one,
 * as `JSON.parse` keeps the last of duplicate keys. Keys are compared decoded (`"\u0069d"` is
 * `id`). Tolerates text cut short (the head of an oversize line): then the last one seen so far.
 */
export function rawTopLevelValue(text: string, key: string): string | undefined {
  return topLevelMembers(text).members.findLast((m) => m.key === key)?.raw;
}

interface TopLevel {
  /** Every member in order, duplicates included, with the key decoded and the value as raw text. */
  readonly members: Array<{ key: string; raw: string }>;
  /** Whether the object's closing brace was reached. */
  readonly complete: boolean;
  /** Whether a key was written with escapes. */
  readonly escapedKey: boolean;
}

function topLevelMembers(text: string): TopLevel {
  const members: Array<{ key: string; raw: string }> = [];
  let escapedKey = false;
  const cut = { members, complete: false, escapedKey: false };
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return cut;
  i = skipSpace(text, i + 1);
  if (text[i] === '}') return { members, complete: true, escapedKey };
  for (;;) {
    if (text[i] !== '"') return { ...cut, escapedKey };
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return { ...cut, escapedKey };
    let name = text.slice(i + 1, keyEnd - 1);
    if (name.includes('\\')) {
      escapedKey = true;
      const decoded = parseString(text.slice(i, keyEnd));
      if (decoded === undefined) return { ...cut, escapedKey };
      name = decoded;
    }
    i = skipSpace(text, keyEnd);
    if (text[i] !== ':') return { ...cut, escapedKey };
    i = skipSpace(text, i + 1);
    const valueEnd = valueEndAt(text, i);
    if (valueEnd < 0) return { ...cut, escapedKey };
    members.push({ key: name, raw: text.slice(i, valueEnd) });
    i = skipSpace(text, valueEnd);
    if (text[i] === '}') return { members, complete: true, escapedKey };
    if (text[i] !== ',') return { ...cut, escapedKey };
    i = skipSpace(text, i + 1);
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
  let from = i + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
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

/** How deep a message the bridge reads when a policy depends on it; deeper ones are refused. */
export const MAX_POLICY_DEPTH = 1000;

/** A message read in full and checked to have one reading only, for a policy to act on. */
export interface StrictReading {
  /** The line decoded (invalid UTF-8 replaced), to trace or divert without decoding it twice. */
  readonly text: string;
  /** The message, when every client reads it the same way. */
  readonly info?: MessageInfo;
  /** Why it may read differently to different clients, if it may. */
  readonly ambiguity?: string;
  /** The raw text of the (last) top-level `id`. */
  readonly idRaw?: string;
  /** The raw text of every top-level `id`: the requests an unreadable answer may be meant for. */
  readonly idTexts: readonly string[];
  /** Whether a top-level `result` or `error` key appears: the line may answer a request. */
  readonly mayAnswer: boolean;
}

/**
 * Reads a line in full for a policy decision. JSON.parse keeps the last of duplicate keys and
 * other parsers the first; `__proto__` turns into a prototype in careless code; a client that
 * decodes invalid UTF-8 its own way sees other keys. Any such line is `ambiguity`, never `info`.
 */
export function readStrict(content: Buffer, maxDepth = MAX_POLICY_DEPTH): StrictReading {
  const text = content.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { text, info: { kind: 'invalid' }, idTexts: [], mayAnswer: false };
  }
  const problem = isUtf8(content) ? scanForAmbiguity(text, maxDepth) : 'bytes that are not UTF-8';
  const top = topLevelMembers(text).members;
  // A batch of answers is refused whole; the requests its elements name are the ones it may answer.
  const batch = Array.isArray(value) ? batchAnswers(value) : undefined;
  const idTexts = batch?.idTexts ?? top.filter((m) => m.key === 'id').map((m) => m.raw);
  const mayAnswer = batch?.mayAnswer ?? top.some((m) => m.key === 'result' || m.key === 'error');
  const idRaw = batch ? undefined : idTexts.at(-1);
  const base = { text, idTexts, mayAnswer, ...(idRaw === undefined ? {} : { idRaw }) };
  const ambiguity = problem ?? shapeAmbiguity(value);
  if (ambiguity) return { ambiguity, ...base };
  return { info: classifyValue(value, text), ...base };
}

/** The ids of a batch's elements that answer (as JSON text; a lenient match is enough to owe an answer). */
function batchAnswers(batch: unknown[]): { idTexts: string[]; mayAnswer: boolean } {
  const idTexts: string[] = [];
  let mayAnswer = false;
  for (const m of batch) {
    if (typeof m !== 'object' || m === null || !(Object.hasOwn(m, 'result') || Object.hasOwn(m, 'error')))
      continue;
    mayAnswer = true;
    const id = (m as { id?: unknown }).id;
    if (typeof id === 'string' || typeof id === 'number') idTexts.push(JSON.stringify(id));
  }
  return { idTexts, mayAnswer };
}

function shapeAmbiguity(value: unknown): string | undefined {
  const answers = (m: object) => Object.hasOwn(m, 'result') || Object.hasOwn(m, 'error');
  if (Array.isArray(value)) {
    return value.some((m) => typeof m !== 'object' || m === null || answers(m))
      ? 'a batch holding a response'
      : undefined;
  }
  if (typeof value !== 'object' || value === null || !answers(value)) return undefined;
  if (Object.hasOwn(value, 'method')) return 'both a request and a response';
  const id = (value as { id?: unknown }).id;
  if (typeof id !== 'string' && typeof id !== 'number')
    return 'a response whose id is not a string or a number';
  return undefined;
}

/** Duplicate keys, `__proto__` keys and nesting past `maxDepth`, anywhere in valid JSON text. */
function scanForAmbiguity(text: string, maxDepth: number): string | undefined {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const open: Array<Set<string> | null> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      const end = stringEnd(text, i);
      if (expectKey) {
        let key = text.slice(i + 1, end - 1);
        if (key.includes('\\')) key = JSON.parse(text.slice(i, end)) as string;
        if (key === '__proto__') return 'a "__proto__" key';
        const keys = open[open.length - 1] as Set<string>;
        if (keys.has(key)) return `a duplicate key ${JSON.stringify(key)}`;
        keys.add(key);
        expectKey = false;
      }
      i = end - 1;
    } else if (c === 123 || c === 91) {
      if (open.length >= maxDepth) return `nesting deeper than ${maxDepth}`;
      open.push(c === 123 ? new Set() : null);
      expectKey = c === 123;
    } else if (c === 125 || c === 93) {
      open.pop();
    } else if (c === 44) {
      expectKey = open[open.length - 1] instanceof Set;
    }
  }
  return undefined;
}

/**
 * Whether a client that reads ids loosely could take the id `a` for `b` (both JSON text): as
 * numbers (the MCP SDK matches responses by `Number(id)`, so `"1"`, `" 1"` and `"0x1"` are 1) or
 * as strings (`1` and `"1"`).
 */
export function idsLooselyEqual(a: string, b: string): boolean {
  let x: unknown;
  let y: unknown;
  try {
    x = JSON.parse(a);
    y = JSON.parse(b);
  } catch {
    return false;
  }
  if (String(x) === String(y)) return true;
  const nx = Number(x);
  return !Number.isNaN(nx) && nx === Number(y);
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
