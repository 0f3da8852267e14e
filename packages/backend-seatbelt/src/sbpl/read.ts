import { SbplSyntaxError } from '../errors.js';

/** An SBPL form: a symbol, a string (kept apart from symbols), or a list. */
export type Sexp =
  | { readonly kind: 'symbol'; readonly value: string }
  | { readonly kind: 'string'; readonly value: string }
  | readonly Sexp[];

const ESCAPES: Readonly<Record<string, string>> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\' };

/**
 * Reads a whole profile into its top-level forms, the way TinyScheme (SBPL's reader) does:
 * `;` to end of line is a comment, strings are double-quoted with backslash escapes,
 * `#"…"` is a raw regex string, everything else between spaces and parentheses is a symbol.
 */
export function readProfile(text: string): Sexp[] {
  let at = 0;
  const forms: Sexp[] = [];
  const stack: Sexp[][] = [];
  const push = (form: Sexp) => {
    const top = stack[stack.length - 1];
    if (top) top.push(form);
    else forms.push(form);
  };
  while (at < text.length) {
    const ch = text[at] as string;
    if (ch === ';') {
      while (at < text.length && text[at] !== '\n') at++;
    } else if (/\s/.test(ch)) {
      at++;
    } else if (ch === '(') {
      stack.push([]);
      at++;
    } else if (ch === ')') {
      const done = stack.pop();
      if (!done) throw new SbplSyntaxError(`unbalanced ")" at offset ${at}`);
      push(done);
      at++;
    } else if (ch === '"' || (ch === '#' && text[at + 1] === '"')) {
      const raw = ch === '#';
      at += raw ? 2 : 1;
      let value = '';
      for (;;) {
        const c = text[at++];
        if (c === undefined) throw new SbplSyntaxError('unterminated string');
        if (c === '"') break;
        if (c === '\\' && !raw) {
          const next = text[at++];
          const escaped = next === undefined ? undefined : ESCAPES[next];
          if (escaped === undefined) throw new SbplSyntaxError(`unknown escape "\\${next ?? ''}"`);
          value += escaped;
        } else value += c;
      }
      push({ kind: 'string', value });
    } else {
      const start = at;
      while (at < text.length && !/[\s();"]/.test(text[at] as string)) at++;
      push({ kind: 'symbol', value: text.slice(start, at) });
    }
  }
  if (stack.length > 0) throw new SbplSyntaxError('unbalanced "(" at end of profile');
  return forms;
}

export const isList = (form: Sexp | undefined): form is readonly Sexp[] => Array.isArray(form);
export const symbolOf = (form: Sexp | undefined): string | undefined =>
  form !== undefined && !isList(form) && form.kind === 'symbol' ? form.value : undefined;
export const stringOf = (form: Sexp | undefined): string | undefined =>
  form !== undefined && !isList(form) && form.kind === 'string' ? form.value : undefined;
