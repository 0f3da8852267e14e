/**
 * A JSON / JSONC parser that keeps the source offsets of every value, so that an edit can replace
 * exactly the bytes of one value and leave every other byte (comments, spacing, key order) alone.
 * Strict mode is RFC 8259 JSON; `comments` adds `//` and block comments and trailing commas, as
 * VS Code's JSONC does.
 */

export type JsonNode = JsonObject | JsonArray | JsonScalar;

interface Span {
  /** Offset of the first character of the value. */
  readonly start: number;
  /** Offset just past the value. */
  readonly end: number;
}

export interface JsonProperty {
  readonly key: string;
  readonly keyStart: number;
  readonly value: JsonNode;
}

export interface JsonObject extends Span {
  readonly kind: 'object';
  readonly properties: readonly JsonProperty[];
}

export interface JsonArray extends Span {
  readonly kind: 'array';
  readonly items: readonly JsonNode[];
}

export interface JsonScalar extends Span {
  readonly kind: 'string' | 'number' | 'boolean' | 'null';
  readonly value: string | number | boolean | null;
}

export interface ParseOptions {
  /** Accept comments and trailing commas (JSONC). */
  readonly comments: boolean;
}

/** Where a document stops being valid: 1-based line and column, and why. */
export class JsonSyntaxError extends Error {
  readonly offset: number;
  readonly line: number;
  readonly column: number;
  readonly reason: string;

  constructor(text: string, offset: number, reason: string) {
    const { line, column } = lineColumn(text, offset);
    super(`line ${line}, column ${column}: ${reason}`);
    this.name = 'JsonSyntaxError';
    this.offset = offset;
    this.line = line;
    this.column = column;
    this.reason = reason;
  }
}

export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

export function parseJsonDocument(text: string, options: ParseOptions): JsonNode {
  return new Parser(text, options).document();
}

/** The plain JavaScript value of a node (the last of duplicate keys wins, as in JSON.parse). */
export function toValue(node: JsonNode): unknown {
  switch (node.kind) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const p of node.properties) {
        Object.defineProperty(out, p.key, {
          value: toValue(p.value),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    }
    case 'array':
      return node.items.map(toValue);
    default:
      return node.value;
  }
}

/** The last property called `key` (JSON.parse semantics), if any. */
export function getProperty(node: JsonNode | undefined, key: string): JsonProperty | undefined {
  if (node?.kind !== 'object') return undefined;
  for (let i = node.properties.length - 1; i >= 0; i--) {
    const p = node.properties[i] as JsonProperty;
    if (p.key === key) return p;
  }
  return undefined;
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

class Parser {
  private pos = 0;

  constructor(
    private readonly text: string,
    private readonly options: ParseOptions,
  ) {
    // A byte-order mark is not JSON, but editors write it; it is kept as it is.
    if (text.charCodeAt(0) === 0xfeff) this.pos = 1;
  }

  document(): JsonNode {
    this.skip();
    if (this.pos >= this.text.length) this.fail('the file is empty: expected a JSON value');
    const value = this.value();
    this.skip();
    if (this.pos < this.text.length) this.fail(`unexpected ${this.describe()} after the end of the document`);
    return value;
  }

  private fail(reason: string, at = this.pos): never {
    throw new JsonSyntaxError(this.text, at, reason);
  }

  private describe(): string {
    if (this.pos >= this.text.length) return 'end of file';
    return `character ${JSON.stringify(this.text[this.pos])}`;
  }

  /** Whitespace, and comments where allowed. */
  private skip(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (WS.has(c)) {
        this.pos++;
      } else if (c === 0x2f /* / */ && (t[this.pos + 1] === '/' || t[this.pos + 1] === '*')) {
        if (!this.options.comments) this.fail('comments are not allowed in this file (it is plain JSON)');
        if (t[this.pos + 1] === '/') {
          const nl = t.indexOf('\n', this.pos);
          this.pos = nl === -1 ? t.length : nl;
        } else {
          const close = t.indexOf('*/', this.pos + 2);
          if (close === -1) this.fail('unterminated block comment');
          this.pos = close + 2;
        }
      } else {
        return;
      }
    }
  }

  private value(): JsonNode {
    const t = this.text;
    const c = t[this.pos];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') {
      const start = this.pos;
      const value = this.string();
      return { kind: 'string', value, start, end: this.pos };
    }
    for (const [word, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (t.startsWith(word, this.pos)) {
        const start = this.pos;
        this.pos += word.length;
        return { kind: value === null ? 'null' : 'boolean', value, start, end: this.pos };
      }
    }
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(t);
    if (m && m[0] !== '-') {
      const start = this.pos;
      this.pos += m[0].length;
      if (/[0-9A-Za-z.]/.test(t[this.pos] ?? '')) this.fail(`invalid number`, start);
      return { kind: 'number', value: Number(m[0]), start, end: this.pos };
    }
    return this.fail(`expected a value, found ${this.describe()}`);
  }

  private string(): string {
    const t = this.text;
    const start = this.pos;
    this.pos++;
    let out = '';
    while (true) {
      if (this.pos >= t.length) this.fail('unterminated string', start);
      const ch = t[this.pos] as string;
      const code = ch.charCodeAt(0);
      if (ch === '"') {
        this.pos++;
        return out;
      }
      if (code === 0x0a || code === 0x0d) this.fail('unterminated string', start);
      if (code < 0x20) this.fail('control character in a string (escape it)');
      if (ch !== '\\') {
        out += ch;
        this.pos++;
        continue;
      }
      const esc = t[this.pos + 1];
      const simple: Record<string, string> = {
        '"': '"',
        '\\': '\\',
        '/': '/',
        b: '\b',
        f: '\f',
        n: '\n',
        r: '\r',
        t: '\t',
      };
      if (esc !== undefined && esc in simple) {
        out += simple[esc];
        this.pos += 2;
      } else if (esc === 'u' && /^[0-9a-fA-F]{4}$/.test(t.slice(this.pos + 2, this.pos + 6))) {
        out += String.fromCharCode(Number.parseInt(t.slice(this.pos + 2, this.pos + 6), 16));
        this.pos += 6;
      } else {
        this.fail('invalid escape in a string');
      }
    }
  }

  private object(): JsonObject {
    const start = this.pos;
    this.pos++;
    const properties: JsonProperty[] = [];
    this.skip();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return { kind: 'object', properties, start, end: this.pos };
    }
    while (true) {
      if (this.text[this.pos] !== '"')
        this.fail(`expected a property name in double quotes, found ${this.describe()}`);
      const keyStart = this.pos;
      const key = this.string();
      this.skip();
      if (this.text[this.pos] !== ':')
        this.fail(`expected ':' after the property name, found ${this.describe()}`);
      this.pos++;
      this.skip();
      const value = this.value();
      properties.push({ key, keyStart, value });
      this.skip();
      const c = this.text[this.pos];
      if (c === '}') {
        this.pos++;
        return { kind: 'object', properties, start, end: this.pos };
      }
      if (c !== ',') this.fail(`expected ',' or '}' in the object, found ${this.describe()}`);
      const comma = this.pos;
      this.pos++;
      this.skip();
      if (this.text[this.pos] === '}') {
        if (!this.options.comments) this.fail('trailing comma (not allowed in plain JSON)', comma);
        this.pos++;
        return { kind: 'object', properties, start, end: this.pos };
      }
    }
  }

  private array(): JsonArray {
    const start = this.pos;
    this.pos++;
    const items: JsonNode[] = [];
    this.skip();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return { kind: 'array', items, start, end: this.pos };
    }
    while (true) {
      items.push(this.value());
      this.skip();
      const c = this.text[this.pos];
      if (c === ']') {
        this.pos++;
        return { kind: 'array', items, start, end: this.pos };
      }
      if (c !== ',') this.fail(`expected ',' or ']' in the array, found ${this.describe()}`);
      const comma = this.pos;
      this.pos++;
      this.skip();
      if (this.text[this.pos] === ']') {
        if (!this.options.comments) this.fail('trailing comma (not allowed in plain JSON)', comma);
        this.pos++;
        return { kind: 'array', items, start, end: this.pos };
      }
    }
  }
}
