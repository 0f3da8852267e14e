/**
 * Decoded views of a line, for redaction: the text as a reader of the line would understand it,
 * with a way back to the spans of the original text. A view is built by one linear scan, and
 * mapped back by the same scan, so neither keeps a per-character table (lines can be 64 MiB).
 */

/** One step of a scan: `out` replaces `src[start, end)`; `null` means the text is kept as it is. */
type Emit = (out: string | null, start: number, end: number) => void;
type Scan = (src: string, emit: Emit) => void;

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

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
    if (j > i) emit(null, i, j);
    if (j >= src.length) return;
    const c = src[j + 1] ?? '';
    const unit = c === 'u' ? hexAt(src, j + 2, 4) : -1;
    if (unit >= 0) {
      emit(String.fromCharCode(unit), j, j + 6);
      i = j + 6;
    } else if (c in SIMPLE_ESCAPES) {
      emit(SIMPLE_ESCAPES[c] as string, j, j + 2);
      i = j + 2;
    } else {
      emit(null, j, j + 1);
      i = j + 1;
    }
  }
};

/** The UTF-8 sequence of `%XX` escapes at `at`, as a code point and its end; undefined if invalid. */
function percentCodePoint(src: string, at: number): { cp: number; end: number } | undefined {
  const byte = (k: number) => (src[at + 3 * k] === '%' ? hexAt(src, at + 3 * k + 1, 2) : -1);
  const b0 = byte(0);
  if (b0 < 0) return undefined;
  if (b0 < 0x80) return { cp: b0, end: at + 3 };
  const n = b0 >= 0xc2 && b0 <= 0xdf ? 1 : b0 >= 0xe0 && b0 <= 0xef ? 2 : b0 >= 0xf0 && b0 <= 0xf4 ? 3 : 0;
  if (n === 0) return undefined;
  let cp = b0 & (0x3f >> n);
  for (let k = 1; k <= n; k++) {
    const b = byte(k);
    if (b < 0x80 || b > 0xbf) return undefined;
    cp = (cp << 6) | (b & 0x3f);
  }
  const min = [0, 0x80, 0x800, 0x10000][n] as number;
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
  return { cp, end: at + 3 * (n + 1) };
}

/**
 * Percent-decoding (UTF-8, hex in any case), and `+` read as a space as query strings mean it. Both
 * `+` and a decoded `+` come out as a space: the needles searched in this view are written the
 * same way, so a `+` that meant itself and one that meant a space both match.
 */
export const percentDecode: Scan = (src, emit) => {
  const trigger = /[%+]/g;
  let i = 0;
  while (i < src.length) {
    trigger.lastIndex = i;
    const j = trigger.exec(src)?.index ?? src.length;
    if (j > i) emit(null, i, j);
    if (j >= src.length) return;
    if (src[j] === '+') {
      emit(' ', j, j + 1);
      i = j + 1;
      continue;
    }
    const decoded = percentCodePoint(src, j);
    if (decoded) {
      emit(decoded.cp === 0x2b ? ' ' : String.fromCodePoint(decoded.cp), j, decoded.end);
      i = decoded.end;
    } else {
      emit(null, j, j + 1);
      i = j + 1;
    }
  }
};

export function decode(scan: Scan, src: string): string {
  const parts: string[] = [];
  scan(src, (out, start, end) => parts.push(out ?? src.slice(start, end)));
  return parts.join('');
}

/**
 * Maps spans of `decode(scan, src)` back to spans of `src`, in one scan. A span edge inside one
 * decoded escape (half of a surrogate pair) widens to the whole escape. `spans` is sorted by start.
 */
export function mapBack(
  scan: Scan,
  src: string,
  spans: ReadonlyArray<readonly [number, number]>,
): Array<[number, number]> {
  // Every edge, in view order, with the direction it rounds; resolved as the scan passes it.
  const edges = spans.flatMap(([s, e], k) => [
    { at: s, up: false, k, start: true },
    { at: e, up: true, k, start: false },
  ]);
  edges.sort((a, b) => a.at - b.at);
  const out: Array<[number, number]> = spans.map(() => [0, 0]);
  let next = 0;
  let view = 0;
  const settle = (srcAt: number) => {
    const edge = edges[next] as (typeof edges)[number];
    (out[edge.k] as [number, number])[edge.start ? 0 : 1] = srcAt;
    next++;
  };
  scan(src, (text, start, end) => {
    const length = text === null ? end - start : text.length;
    while (next < edges.length && (edges[next]?.at as number) < view + length) {
      const edge = edges[next] as (typeof edges)[number];
      if (edge.at === view) settle(start);
      else if (text === null) settle(start + (edge.at - view));
      else settle(edge.up ? end : start);
    }
    view += length;
  });
  while (next < edges.length) settle(src.length);
  return out;
}
