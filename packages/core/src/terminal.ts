import { StringDecoder } from 'node:string_decoder';

/**
 * Text from a sandbox on its way to a person. A terminal obeys control characters: `ESC[8m` hides
 * text, `ESC]0;…` sets the window title, `ESC]52;c;…` writes the clipboard, `ESC[2J` clears the
 * screen, and U+009B is the same CSI as `ESC[`. Every C0 control but tab and newline (a carriage
 * return only when it ends a line), DEL and every C1 control is shown as an escape instead:
 * `\x1b`, `\x7f`, `\u009b`. The trace keeps the exact bytes; only what is shown is escaped.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function escapeControls(text: string): string {
  CONTROLS.lastIndex = 0;
  if (!CONTROLS.test(text)) return text;
  return text.replace(CONTROLS, (c, offset: number) => {
    if (c === '\r' && text[offset + 1] === '\n') return c;
    const code = c.charCodeAt(0);
    return code < 0x80 ? `\\x${hex(code)}` : `\\u00${hex(code)}`;
  });
}

function hex(code: number): string {
  return code.toString(16).padStart(2, '0');
}

/** `JSON.stringify` escapes C0 controls but passes DEL and C1 as they are; this escapes them too. */
export function jsonForTerminal(value: unknown, space?: number): string {
  // Outside strings JSON has no such characters, so the text stays the same JSON value.
  return (JSON.stringify(value, null, space) ?? 'null').replace(
    /[\u007f-\u009f]/g,
    (c) => `\\u00${hex(c.charCodeAt(0))}`,
  );
}

/**
 * Escapes a byte stream chunk by chunk: a UTF-8 character split across chunks is decoded whole,
 * and a carriage return at the end of a chunk waits to see whether a newline follows.
 */
export class ControlEscaper {
  readonly #decoder = new StringDecoder('utf8');
  #heldReturn = false;

  write(chunk: Uint8Array): string {
    return this.#escape(this.#decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
  }

  end(): string {
    const rest = this.#escape(this.#decoder.end());
    if (!this.#heldReturn) return rest;
    this.#heldReturn = false;
    return `${rest}\\x0d`;
  }

  #escape(text: string): string {
    let whole = this.#heldReturn ? `\r${text}` : text;
    this.#heldReturn = whole.endsWith('\r');
    if (this.#heldReturn) whole = whole.slice(0, -1);
    return escapeControls(whole);
  }
}
