import { SeatbeltPathError } from '../errors.js';

/**
 * An SBPL string literal for `value`. SBPL is read by TinyScheme: inside "…" only `\` and `"`
 * are special, so escaping those two keeps any other text one literal. Control characters
 * (newline, NUL…) are refused rather than escaped: no path of ours needs them, and a reader
 * that took one differently would end the literal early.
 */
export function sbplString(value: string): string {
  if (hasControl(value)) {
    throw new SeatbeltPathError(
      `${JSON.stringify(value)} has a control character: it cannot be put in a Seatbelt profile`,
    );
  }
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Does `text` hold a C0 control character or DEL (newline, NUL, escape…)? */
export function hasControl(text: string): boolean {
  return CONTROL.test(text);
}
