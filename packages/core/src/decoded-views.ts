/**
 * Decoded views of a line, for redaction: the text as a reader of the line would understand it,
 * with a way back to the spans of the original text. A view is built by one linear scan, and
 * mapped back by the same scan, so neither keeps a per-character table (lines can be 64 MiB).
 */

/**
 * One step of a scan: the code point `cp` replaces `src[start, end)`; -1 means the text is kept as
 * it is. An escape always decodes to one code point, so no step allocates.
 */
type Emit = (cp: number, start: number, end: number) => void;
type Scan = (src: string, emit: Emit) => void;

const PERCENT = 0x25;
const PLUS = 0x2b;
const SPACE = 0x20;
/** The letters after a backslash that JSON defines, and what they stand for. */
const SIMPLE_ESCAPES = new Map<number, number>(
  [...'"\\/bfnrt'].map((c, k) => [c.charCodeAt(0), '"\\/\b\f\n\r\t'.charCodeAt(k)]),
);

function hexAt(src: string, at: number, digits: number): number {
  let value = 0;
  for (let k = at; k < at + digits; k++) {
    const c = src.charCodeAt(k);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1;
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

/**
 * JSON string escapes, wherever they are in the line (a stderr line has no quotes around them):
 * `\uXXXX` in any case (a surrogate pair decodes to its two halves, which is the character), `\/`,
 * `\"`, `\\` and the letters. A backslash that starts no escape stays.
 */
export const unescapeJson: Scan = (src, emit) => {
  let i = 0;
  while (i < src.length) {
    let j = src.indexOf('\\', i);
    if (j === -1) j = src.length;
    if (j > i) emit(-1, i, j);
    if (j >= src.length) return;
    const c = src.charCodeAt(j + 1);
    const unit = c === 0x75 ? hexAt(src, j + 2, 4) : -1;
    const simple = SIMPLE_ESCAPES.get(c);
    if (unit >= 0) {
      emit(unit, j, j + 6);
      i = j + 6;
    } else if (simple !== undefined) {
      emit(simple, j, j + 2);
      i = j + 2;
    } else {
      emit(-1, j, j + 1);
      i = j + 1;
    }
  }
};

/**
 * The UTF-8 sequence of `%XX` escapes at `at`, as `codePoint * 8 + bytes`, or -1 if it is not one
 * (overlong forms, surrogates and stray continuation bytes are not).
 */
function percentCodePoint(src: string, at: number): number {
  const byte = (k: number) => (src.charCodeAt(at + 3 * k) === PERCENT ? hexAt(src, at + 3 * k + 1, 2) : -1);
  const b0 = byte(0);
  if (b0 < 0x80) return b0 < 0 ? -1 : b0 * 8 + 1;
  const n = b0 >= 0xc2 && b0 <= 0xdf ? 1 : b0 >= 0xe0 && b0 <= 0xef ? 2 : b0 >= 0xf0 && b0 <= 0xf4 ? 3 : 0;
  if (n === 0) return -1;
  let cp = b0 & (0x3f >> n);
  for (let k = 1; k <= n; k++) {
    const b = byte(k);
    if (b < 0x80 || b > 0xbf) return -1;
    cp = (cp << 6) | (b & 0x3f);
  }
  const min = n === 1 ? 0x80 : n === 2 ? 0x800 : 0x10000;
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
  return cp * 8 + n + 1;
}

/**
 * Percent-decoding (UTF-8, hex in any case), and `+` read as a space as query strings mean it. Both
 * `+` and a decoded `+` come out as a space: the needles searched in this view are written the
 * same way, so a `+` that meant itself and one that meant a space both match.
 */
export const percentDecode: Scan = (src, emit) => {
  let kept = 0;
  let nextPercent = src.indexOf('%');
  let nextPlus = src.indexOf('+');
  for (;;) {
    if (nextPercent === -1 && nextPlus === -1) break;
    const plus = nextPercent === -1 || (nextPlus !== -1 && nextPlus < nextPercent);
    const i = plus ? nextPlus : nextPercent;
    const decoded = plus ? SPACE * 8 : percentCodePoint(src, i);
    if (decoded < 0) {
      nextPercent = src.indexOf('%', i + 1);
      continue;
    }
    if (i > kept) emit(-1, kept, i);
    const cp = decoded >> 3;
    const end = plus ? i + 1 : i + 3 * (decoded & 7);
    emit(cp === PLUS ? SPACE : cp, i, end);
    kept = end;
    if (nextPercent !== -1 && nextPercent < end) nextPercent = src.indexOf('%', end);
    if (nextPlus !== -1 && nextPlus < end) nextPlus = src.indexOf('+', end);
  }
  if (src.length > kept) emit(-1, kept, src.length);
};

/** Identity runs from this length on are kept as slices of the source rather than copied. */
const SLICE_FROM = 64;
const BUFFER_UNITS = 8192;

/** The UTF-16 units that the escapes in `src` decode to: a scan that builds nothing. */
export function decodedUnits(scan: Scan, src: string): Set<number> {
  const seen = new Set<number>();
  scan(src, (cp) => {
    if (cp < 0x10000) {
      if (cp >= 0) seen.add(cp);
    } else {
      seen.add(0xd800 + ((cp - 0x10000) >> 10));
      seen.add(0xdc00 + ((cp - 0x10000) & 0x3ff));
    }
  });
  return seen;
}

/**
 * The view, or the source itself (the same string) when nothing in it decodes. Long runs of kept
 * text are slices; escapes and short runs go through a small buffer, so an escape-dense line makes
 * few strings.
 */
export function decode(scan: Scan, src: string): string {
  const parts: string[] = [];
  const buffer = new Uint16Array(BUFFER_UNITS);
  let n = 0;
  let changed = false;
  const flush = () => {
    if (n > 0) parts.push(String.fromCharCode.apply(null, buffer.subarray(0, n) as unknown as number[]));
    n = 0;
  };
  scan(src, (cp, start, end) => {
    if (cp < 0 && end - start >= SLICE_FROM) {
      flush();
      parts.push(src.slice(start, end));
      return;
    }
    if (n + Math.max(2, end - start) > BUFFER_UNITS) flush();
    if (cp < 0) for (let k = start; k < end; k++) buffer[n++] = src.charCodeAt(k);
    else if (cp < 0x10000) buffer[n++] = cp;
    else {
      buffer[n++] = 0xd800 + ((cp - 0x10000) >> 10);
      buffer[n++] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
    }
    if (cp >= 0) changed = true;
  });
  if (!changed) return src;
  flush();
  return parts.join('');
}

/**
 * Maps spans of `decode(scan, src)` back to spans of `src`, in one scan. `edges` is a flat list
 * (start, end, start, end...), sorted, of disjoint spans. A span edge inside one decoded escape
 * (half of a surrogate pair) widens to the whole escape.
 */
export function mapBack(scan: Scan, src: string, edges: readonly number[]): number[] {
  const out = new Array<number>(edges.length);
  let next = 0;
  let view = 0;
  scan(src, (cp, start, end) => {
    const length = cp < 0 ? end - start : cp < 0x10000 ? 1 : 2;
    for (; next < edges.length && (edges[next] as number) < view + length; next++) {
      const at = edges[next] as number;
      out[next] = at === view ? start : cp < 0 ? start + (at - view) : next % 2 === 0 ? start : end;
    }
    view += length;
  });
  for (; next < edges.length; next++) out[next] = src.length;
  return out;
}
