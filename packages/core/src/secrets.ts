/**
 * The secrets a process knows, and their redaction from everything it writes (the trace, stderr):
 * found by what a line means, not by its bytes. See the README's "Secrets and redaction".
 */
import { decode, decodedUnits, mapBack, percentDecode, unescapeJson } from './decoded-views.js';

export const REDACTED = '[REDACTED]';

/** Shorter values would match everywhere in a trace; they are not treated as secrets. */
export const MIN_REDACTED_LENGTH = 4;
/**
 * Base64 forms are searched from this many UTF-8 bytes on. A shorter value's base64 at an odd
 * alignment is 4 or 5 characters, which any long base64 blob (an image in a tool result) contains
 * by chance; from 6 bytes on each needle is at least 7 characters (42 bits).
 */
export const MIN_ENCODED_REDACTED_BYTES = 6;
/** Layers of JSON escaping undone (JSON text inside a JSON string inside a JSON line). */
const MAX_UNESCAPE_DEPTH = 3;
const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const PLUS = 0x2b;

export type Redactor = (text: string) => string;

/** What to look for in one kind of view: as written, and as the percent view writes `+`. */
interface Needles {
  readonly plain: readonly string[];
  readonly plus: readonly string[];
  /** Some secret holds a space: a line with `+` and no `%` needs the percent view. */
  readonly plusMatters: boolean;
}

/**
 * The base64 (and base64url) of `bytes` at each of the three alignments it can have inside a
 * longer value (`user:secret`, `Bearer secret`, `KEY=secret`, any framing): only the characters
 * that depend on the secret's bytes alone.
 */
export function base64Needles(bytes: Buffer): string[] {
  const out = new Set<string>();
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const text = encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    out.add(text);
    out.add(text.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...out];
}

/**
 * A set of secret values that other code adds to (env values, a bearer token, stand-ins' real
 * values); `redact` replaces each of them, in every form listed in the README, with [REDACTED].
 * Add secrets before the sessions that could print them start: a relay that began with an empty
 * set and no trace passes output through unframed.
 */
export class SecretSet {
  readonly #values = new Set<string>();
  #needles: Needles | undefined;

  constructor(values: Iterable<string> = []) {
    for (const value of values) this.add(value);
  }

  /** Adds a secret; false (and nothing added) when it is shorter than MIN_REDACTED_LENGTH. */
  add(value: string): boolean {
    if (value.length < MIN_REDACTED_LENGTH) return false;
    if (!this.#values.has(value)) {
      this.#values.add(value);
      this.#needles = undefined;
    }
    return true;
  }

  get size(): number {
    return this.#values.size;
  }

  /** The values, for a component that takes a plain list. */
  values(): string[] {
    return [...this.#values];
  }

  /** Replaces every secret in `text`, in each form it is searched in. Linear in the text's length. */
  readonly redact: Redactor = (text) => {
    if (this.#values.size === 0 || text.length === 0) return text;
    this.#needles ??= this.#build();
    const needles = this.#needles;
    let spans: Spans = [];
    let level = text;
    let plain = needles.plain;
    const chain: string[] = [];
    for (let depth = 0; ; depth++) {
      spans = union(spans, this.#inLevel(level, chain, plain, needles));
      if (depth === MAX_UNESCAPE_DEPTH || !level.includes('\\')) break;
      // A match in the next level that holds no unescaped unit is text of this one, searched
      // here. The level is still needed when what it unescapes makes new escapes: a backslash
      // (JSON one level down), a % or a hex digit after one, or a + (percent-decoding).
      const seen = decodedUnits(unescapeJson, level);
      plain = holding(needles.plain, seen);
      if (plain.length === 0 && !makesEscapes(seen, level)) break;
      chain.push(level);
      level = decode(unescapeJson, level);
    }
    return spans.length === 0 ? text : replaceSpans(text, spans);
  };

  /**
   * For text cut short at an arbitrary point (the head of an oversize line): redacts, then drops
   * the tail that could hold the start of a secret's form (12 characters for each character of the
   * longest form: the most an escape spells one with).
   */
  readonly redactCut: Redactor = (text) => {
    if (this.#values.size === 0) return text;
    this.#needles ??= this.#build();
    const longest = Math.max(...this.#needles.plain.map((n) => n.length));
    const kept = text.slice(0, Math.max(0, text.length - 12 * longest));
    return this.redact(kept);
  };

  /** Matches in one level of JSON unescaping and in its percent-decoded view, as spans of the line. */
  #inLevel(level: string, chain: readonly string[], plain: readonly string[], needles: Needles): Spans {
    let spans = find(level, plain);
    if (level.includes('%') || (needles.plusMatters && level.includes('+'))) {
      const wanted = holding(needles.plus, decodedUnits(percentDecode, level));
      const found = wanted.length === 0 ? [] : find(decode(percentDecode, level), wanted);
      if (found.length > 0) spans = union(spans, mapBack(percentDecode, level, found));
    }
    for (let k = chain.length - 1; k >= 0 && spans.length > 0; k--) {
      // Mapped spans stay sorted; widened ones may now touch, so they are joined again.
      spans = union(mapBack(unescapeJson, chain[k] as string, spans), []);
    }
    return spans;
  }

  #build(): Needles {
    const plain = new Set<string>();
    for (const value of this.#values) {
      plain.add(value);
      const bytes = Buffer.from(value);
      if (bytes.length >= MIN_ENCODED_REDACTED_BYTES) for (const n of base64Needles(bytes)) plain.add(n);
    }
    const list = [...plain];
    return {
      plain: list,
      plus: [...new Set(list.map((n) => n.replace(/\+/g, ' ')))],
      plusMatters: [...this.#values].some((v) => v.includes(' ')),
    };
  }
}

function makesEscapes(units: ReadonlySet<number>, level: string): boolean {
  if (units.has(BACKSLASH) || units.has(PERCENT) || units.has(PLUS)) return true;
  if (!level.includes('%')) return false;
  for (const u of units)
    if ((u >= 48 && u <= 57) || (u >= 65 && u <= 70) || (u >= 97 && u <= 102)) return true;
  return false;
}

/** The needles that hold at least one of the `units`. */
function holding(needles: readonly string[], units: ReadonlySet<number>): string[] {
  return needles.filter((needle) => {
    for (let k = 0; k < needle.length; k++) if (units.has(needle.charCodeAt(k))) return true;
    return false;
  });
}

/** Spans of a text as a flat list (start, end, start, end...), sorted and disjoint. */
type Spans = number[];

/** Every occurrence of each needle, left to right without overlap (an overlap is inside a match). */
function find(text: string, needles: readonly string[]): Spans {
  let spans: Spans = [];
  for (const needle of needles) {
    const found: Spans = [];
    for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
      found.push(at, at + needle.length);
    }
    if (found.length > 0) spans = union(spans, found);
  }
  return spans;
}

/** Two sorted span lists as one, overlapping and touching spans joined. Linear. */
function union(a: Spans, b: Spans): Spans {
  const out: Spans = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const fromA = j >= b.length || (i < a.length && (a[i] as number) <= (b[j] as number));
    const start = (fromA ? a[i] : b[j]) as number;
    const end = (fromA ? a[i + 1] : b[j + 1]) as number;
    if (fromA) i += 2;
    else j += 2;
    const last = out.length - 1;
    if (last > 0 && start <= (out[last] as number)) out[last] = Math.max(out[last] as number, end);
    else out.push(start, end);
  }
  return out;
}

function replaceSpans(text: string, spans: Spans): string {
  const parts: string[] = [];
  let kept = 0;
  for (let k = 0; k < spans.length; k += 2) {
    parts.push(text.slice(kept, spans[k]), REDACTED);
    kept = spans[k + 1] as number;
  }
  parts.push(text.slice(kept));
  return parts.join('');
}

/** A redactor over a fixed list, or over a shared set (which later additions reach). */
export function createRedactor(secrets: readonly string[] | SecretSet): Redactor {
  return asSecretSet(secrets).redact;
}

export function asSecretSet(secrets: readonly string[] | SecretSet): SecretSet {
  return secrets instanceof SecretSet ? secrets : new SecretSet(secrets);
}
