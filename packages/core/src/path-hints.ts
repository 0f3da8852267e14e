import type { Logger } from './logger.js';
import type { TraceSink } from './trace.js';

/**
 * A host path the server's command line names that exists on this machine but is not shown in
 * the sandbox, and the flag that would show it. Built by the caller from validated values only:
 * `flag` is printed as it is.
 */
export interface MountHint {
  readonly path: string;
  readonly flag: string;
}

/** What watches the server's output for something to tell the user (env and path hints). */
export interface ServerOutputHints {
  /** A chunk of the server's stderr, as it came (line ends anywhere). */
  chunk(bytes: Uint8Array): void;
  /** One whole line of the server's stderr. */
  line(text: string): void;
  /** The server's stderr ended. */
  end(): void;
  /** A response the bridge already parsed. */
  response(value: unknown): void;
}

/** Characters of an error text searched (the rest is not looked at). */
const MAX_SCANNED_TEXT = 64 * 1024;

/**
 * Says once per path, on stderr and in the trace (`mount-hint`), when the server's stderr or an
 * error it answers names a host path from its own command line that the sandbox does not show:
 * the server failed on a path that exists here (ENOENT inside). The message is built from the
 * hint, never from what the server printed.
 */
export class HostPathHints implements ServerOutputHints {
  readonly #hints: readonly MountHint[];
  readonly #said = new Set<string>();
  readonly #logger: Logger;
  readonly #trace: TraceSink | undefined;
  readonly #longest: number;
  /** The end of the last chunk, long enough to hold a path cut between chunks. */
  #tail = '';

  constructor(hints: readonly MountHint[], logger: Logger, trace?: TraceSink) {
    this.#hints = hints;
    this.#logger = logger;
    this.#trace = trace;
    this.#longest = Math.max(0, ...hints.map((hint) => Buffer.byteLength(hint.path)));
  }

  get active(): boolean {
    return this.#hints.length > 0;
  }

  chunk(bytes: Uint8Array): void {
    if (!this.#listening()) return;
    const text = this.#tail + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    this.#search(text);
    this.#tail = text.slice(-(this.#longest + 1));
  }

  line(text: string): void {
    if (this.#listening()) this.#search(text);
  }

  end(): void {
    if (this.#tail) this.#search(this.#tail);
    this.#tail = '';
  }

  response(value: unknown): void {
    if (!this.#listening() || typeof value !== 'object' || value === null) return;
    const { error, result } = value as { error?: unknown; result?: unknown };
    if (typeof error === 'object' && error !== null) {
      const { message } = error as { message?: unknown };
      if (typeof message === 'string') this.#search(message.slice(0, MAX_SCANNED_TEXT));
      return;
    }
    if (typeof result !== 'object' || result === null) return;
    const { isError, content } = result as { isError?: unknown; content?: unknown };
    if (isError !== true || !Array.isArray(content)) return;
    for (const item of content.slice(0, 16)) {
      const text = (item as { text?: unknown } | null)?.text;
      if (typeof text === 'string') this.#search(text.slice(0, MAX_SCANNED_TEXT));
    }
  }

  #listening(): boolean {
    return this.#said.size < this.#hints.length;
  }

  #search(text: string): void {
    for (const hint of this.#hints) {
      if (!this.#said.has(hint.path) && namesPath(text, hint.path)) this.#say(hint);
    }
  }

  #say(hint: MountHint): void {
    this.#said.add(hint.path);
    this.#trace?.event('mount-hint', { path: hint.path, flag: hint.flag });
    this.#logger.warn(
      `the server used ${hint.path}, which exists on this machine but is not in the sandbox: show it with ${hint.flag}`,
    );
  }
}

/** Whether `text` names `path` or something inside it, as a whole path (not a longer name). */
function namesPath(text: string, path: string): boolean {
  for (let at = text.indexOf(path); at !== -1; at = text.indexOf(path, at + 1)) {
    const next = text.charCodeAt(at + path.length);
    const before = at === 0 ? Number.NaN : text.charCodeAt(at - 1);
    const startsClean = Number.isNaN(before) || !isNameChar(before);
    const endsClean = Number.isNaN(next) || next === 0x2f || !isNameChar(next);
    if (startsClean && endsClean) return true;
  }
  return false;
}

function isNameChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x5f ||
    code === 0x2d ||
    code === 0x2e
  );
}

/** One watcher fed to each of several; undefined when none is active. */
export function combineHints(
  all: readonly (ServerOutputHints & { readonly active: boolean })[],
): ServerOutputHints | undefined {
  const active = all.filter((hints) => hints.active);
  if (active.length === 0) return undefined;
  if (active.length === 1) return active[0];
  return {
    chunk: (bytes) => {
      for (const hints of active) hints.chunk(bytes);
    },
    line: (text) => {
      for (const hints of active) hints.line(text);
    },
    end: () => {
      for (const hints of active) hints.end();
    },
    response: (value) => {
      for (const hints of active) hints.response(value);
    },
  };
}
