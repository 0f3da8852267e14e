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
    if (bytes[bytes.length - 1] === 0x0a) this.#sayPending();
  }

  /** One whole line of the server's stderr. */
  line(text: string): void {
    if (!this.#listening()) return;
    this.#search(text, this.#pending);
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
      if (typeof message === 'string') this.#search(message.slice(0, MAX_SCANNED_TEXT), found);
    } else if (typeof result === 'object' && result !== null) {
      const { isError, content } = result as { isError?: unknown; content?: unknown };
      if (isError !== true || !Array.isArray(content)) return;
      for (const item of content.slice(0, MAX_SCANNED_ITEMS)) {
        const text = (item as { text?: unknown } | null)?.text;
        if (typeof text === 'string') this.#search(text.slice(0, MAX_SCANNED_TEXT), found);
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
