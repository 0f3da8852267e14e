/**
 * Finds the raw source text of a top-level member of a JSON object, without converting it: a
 * JSON-RPC id like 9007199254740993 must be echoed byte for byte, and JSON.parse would round it.
 * The text must already be valid JSON (the caller parsed it); like JSON.parse, the last of
 * duplicate keys wins. Returns undefined when the text is not an object or has no such member.
 */
export function rawJsonMember(text: string, key: string): string | undefined {
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return undefined;
  i = skipSpace(text, i + 1);
  let found: string | undefined;
  while (i < text.length && text[i] !== '}') {
    const keyEnd = skipString(text, i);
    // Keys may be escaped ("\u0069d" is "id"): decode them the way JSON.parse does.
    const name = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipSpace(text, keyEnd);
    i = skipSpace(text, i + 1); // the colon
    const valueEnd = skipValue(text, i);
    if (name === key) found = text.slice(i, valueEnd);
    i = skipSpace(text, valueEnd);
    if (text[i] === ',') i = skipSpace(text, i + 1);
  }
  return found;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r'))
    i++;
  return i;
}

/** `i` is at an opening quote; returns the index after the closing one. */
function skipString(text: string, i: number): number {
  i++;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return i;
}

function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    while (i < text.length) {
      const d = text[i];
      if (d === '"') {
        i = skipString(text, i);
        continue;
      }
      if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  // A number or a literal: up to the next delimiter.
  while (i < text.length && !',}] \t\n\r'.includes(text[i]!)) i++;
  return i;
}
