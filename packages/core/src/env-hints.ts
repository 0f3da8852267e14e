import { knownSecretHosts } from './known-secrets.js';
import type { Logger } from './logger.js';
import type { TraceSink } from './trace.js';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const TOKEN = /[A-Za-z0-9_]+/g;

/**
 * Variables the sandbox sets for itself (its own PATH, HOME, proxy and TLS trust), or that describe
 * the host's shell rather than configure a server: a server naming one is not asking for the
 * host's value, and a hint to pass it would be wrong.
 */
const PROVIDED = new Set([
  'PATH',
  'HOME',
  'TMPDIR',
  'TMP',
  'TEMP',
  'LANG',
  'LANGUAGE',
  'USER',
  'LOGNAME',
  'SHELL',
  'PWD',
  'OLDPWD',
  'SHLVL',
  'TERM',
  'HOSTNAME',
  'TZ',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
]);

/** The withheld names a hint may name: valid variable names only, none the sandbox provides. */
export function hintableNames(withheld: readonly string[]): string[] {
  return withheld.filter(
    (name) => name.length > 1 && NAME.test(name) && !PROVIDED.has(name) && !name.startsWith('LC_'),
  );
}

/** Characters of a text searched in a tool result or error (the rest is not looked at). */
const MAX_SCANNED_TEXT = 64 * 1024;
/** Content items of a failed tool result searched. */
const MAX_SCANNED_ITEMS = 16;
/** A stderr line longer than this is no field name of pydantic's (only its end is kept, to find the line's end). */
const MAX_FIELD_LINE = 256;
/** pydantic's validation error: the field's name on a line of its own, then this line. */
const FIELD_REQUIRED = /^\s*Field required \[type=missing\b/;
const FIELD_NAME = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*$/;

/**
 * The withheld name a pydantic-settings field stands for: the one equal to it whatever the case
 * (pydantic-settings reads variables case-insensitively), else the one ending in `_<FIELD>` (an
 * `env_prefix`). Two candidates are a guess that could send the wrong secret in: none then.
 */
export function fieldVariable(field: string, names: ReadonlySet<string>): string | undefined {
  const upper = field.toUpperCase();
  const same = [...names].filter((name) => name.toUpperCase() === upper);
  if (same.length > 0) return same.length === 1 ? same[0] : undefined;
  const prefixed = [...names].filter((name) => name.toUpperCase().endsWith(`_${upper}`));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

/**
 * Says once per name, on stderr and in the trace (`env-hint`), when the server names a host
 * variable that was withheld from it: which `--env` flag passes it. The name is looked up in the
 * set of withheld names, never copied from what the server printed, so nothing the server chose
 * (a control character, a value) reaches the message. Matches are whole identifiers.
 */
export class WithheldEnvHints {
  readonly #names: ReadonlySet<string>;
  readonly #maxLength: number;
  readonly #said = new Set<string>();
  readonly #logger: Logger;
  readonly #trace: TraceSink | undefined;
  /** Names found on a stderr line not yet ended: said after it, so the hint gets its own line. */
  #pending: string[] = [];
  /** Identifier characters at the end of the last chunk, capped past the longest name. */
  #tail = '';
  /** The stderr line not yet ended (capped), and the last whole line: for pydantic's field lines. */
  #partial = '';
  #previous = '';
  readonly #suggestSecrets: boolean;

  /**
   * `suggestSecrets`: the backend substitutes `--secret`, so a variable whose API host is known
   * (known-secrets.ts) is hinted as a stand-in bound to that host rather than the real value.
   */
  constructor(
    withheld: readonly string[],
    logger: Logger,
    trace?: TraceSink,
    options: { readonly suggestSecrets?: boolean } = {},
  ) {
    this.#suggestSecrets = options.suggestSecrets ?? false;
    this.#names = new Set(hintableNames(withheld));
    this.#maxLength = Math.max(0, ...[...this.#names].map((name) => name.length));
    this.#logger = logger;
    this.#trace = trace;
  }

  get active(): boolean {
    return this.#names.size > 0;
  }

  /** A chunk of the server's stderr, as it came (line ends anywhere). */
  chunk(bytes: Uint8Array): void {
    if (!this.#listening()) return;
    // latin1 maps each byte to one character: UTF-8 sequences are never identifier characters.
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
    const joined = this.#tail + text;
    let cut = joined.length;
    while (cut > 0 && isIdentifierChar(joined.charCodeAt(cut - 1))) cut--;
    // An identifier longer than every name can match none, whatever follows: keep it that long.
    this.#tail = joined.slice(cut, cut + this.#maxLength + 1);
    this.#search(joined.slice(0, cut), this.#pending);
    this.#feedLines(text);
    if (bytes[bytes.length - 1] === 0x0a) this.#sayPending();
  }

  /** One whole line of the server's stderr. */
  line(text: string): void {
    if (!this.#listening()) return;
    this.#search(text, this.#pending);
    this.#wholeLine(text.slice(-MAX_FIELD_LINE), this.#pending);
    this.#sayPending();
  }

  /** The server's stderr ended. */
  end(): void {
    if (this.#tail) this.#search(this.#tail, this.#pending);
    this.#tail = '';
    this.#sayPending();
  }

  /**
   * A response the bridge already parsed: an error's message, or the text of a tool result marked
   * `isError`, is searched too. Anything else costs one property check.
   */
  response(value: unknown): void {
    if (!this.#listening() || typeof value !== 'object' || value === null) return;
    const found: string[] = [];
    const { error, result } = value as { error?: unknown; result?: unknown };
    if (typeof error === 'object' && error !== null) {
      const { message } = error as { message?: unknown };
      if (typeof message === 'string') this.#searchText(message.slice(0, MAX_SCANNED_TEXT), found);
    } else if (typeof result === 'object' && result !== null) {
      const { isError, content } = result as { isError?: unknown; content?: unknown };
      if (isError !== true || !Array.isArray(content)) return;
      for (const item of content.slice(0, MAX_SCANNED_ITEMS)) {
        const text = (item as { text?: unknown } | null)?.text;
        if (typeof text === 'string') this.#searchText(text.slice(0, MAX_SCANNED_TEXT), found);
      }
    }
    for (const name of found) this.#say(name);
  }

  #listening(): boolean {
    return this.#said.size < this.#names.size;
  }

  #search(text: string, into: string[]): void {
    if (text.length === 0) return;
    for (const match of text.matchAll(TOKEN)) {
      const name = match[0];
      if (this.#names.has(name) && !this.#said.has(name) && !into.includes(name)) into.push(name);
    }
  }

  /** A whole text (an error message, a tool result): its names, and pydantic's field lines. */
  #searchText(text: string, into: string[]): void {
    this.#search(text, into);
    let previous = '';
    for (const line of text.split('\n')) {
      this.#fieldLine(previous, line, into);
      previous = line.length > MAX_FIELD_LINE ? '' : line;
    }
  }

  /** Stderr text as it comes: each line it ends is looked at with the one before it. */
  #feedLines(text: string): void {
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      this.#wholeLine(this.#partial + text.slice(start, end), this.#pending);
      this.#partial = '';
      start = end + 1;
    }
    // A long unfinished line: its start is kept (a field name is short), marked too long by its size.
    this.#partial = (this.#partial + text.slice(start)).slice(0, MAX_FIELD_LINE + 1);
  }

  #wholeLine(line: string, into: string[]): void {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    this.#fieldLine(this.#previous, text, into);
    this.#previous = text.length > MAX_FIELD_LINE ? '' : text;
  }

  #fieldLine(previous: string, line: string, into: string[]): void {
    if (!FIELD_REQUIRED.test(line)) return;
    const field = FIELD_NAME.exec(previous)?.[1];
    const name = field === undefined ? undefined : fieldVariable(field, this.#names);
    if (name !== undefined && !this.#said.has(name) && !into.includes(name)) into.push(name);
  }

  #sayPending(): void {
    const names = this.#pending;
    this.#pending = [];
    for (const name of names) this.#say(name);
  }

  #say(name: string): void {
    if (this.#said.has(name)) return;
    this.#said.add(name);
    const hosts = this.#suggestSecrets ? knownSecretHosts(name) : undefined;
    if (hosts === undefined) {
      this.#trace?.event('env-hint', { name, flag: `--env ${name}` });
      this.#logger.warn(`the server asked for ${name}, which was withheld: pass it with --env ${name}`);
      return;
    }
    const flag = `--secret ${name}@${hosts.join(',')}`;
    const grants = hosts.map((host) => `--allow-net ${host}`).join(' ');
    this.#trace?.event('env-hint', { name, flag });
    this.#logger.warn(
      `the server asked for ${name}, which was withheld: pass it with ${flag} ${grants} ` +
        `(the server gets a stand-in, the real value goes only to ${hosts.join(', ')}), or with --env ${name}`,
    );
  }
}

function isIdentifierChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x5f
  );
}
