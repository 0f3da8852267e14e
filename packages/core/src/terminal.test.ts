import { describe, expect, it } from 'vitest';
import { ControlEscaper, escapeControls, jsonForTerminal } from './terminal.js';

const HOSTILE = '\x1b[8mhidden \x1b]0;title\x07 \x1b]52;c;eA==\x07 \x1b[2J \u009b31m \x7f';

describe('escapeControls', () => {
  it('shows C0, DEL and C1 controls as escapes, and keeps tab, newline and CRLF', () => {
    expect(escapeControls(HOSTILE)).toBe(
      '\\x1b[8mhidden \\x1b]0;title\\x07 \\x1b]52;c;eA==\\x07 \\x1b[2J \\u009b31m \\x7f',
    );
    expect(escapeControls('a\tb\nc\r\nd\re\0')).toBe('a\tb\nc\r\nd\\x0de\\x00');
    expect(escapeControls('plain é 日本 𝄞')).toBe('plain é 日本 𝄞');
  });

  it('escapes C1 and DEL in JSON output too, which stays the same JSON value', () => {
    const value = { name: HOSTILE };
    const text = jsonForTerminal(value, 2);
    const controls = [...text].filter((c) => {
      const code = c.charCodeAt(0);
      return (code < 0x20 && c !== '\n') || (code >= 0x7f && code <= 0x9f);
    });
    expect(controls).toEqual([]);
    expect(JSON.parse(text)).toEqual(value);
  });

  it('escapes a byte stream whatever the chunking: split UTF-8 C1, a CR before a later LF', () => {
    const bytes = Buffer.from(`x\u009by\r\nz\r`);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const escaper = new ControlEscaper();
      const out = escaper.write(bytes.subarray(0, cut)) + escaper.write(bytes.subarray(cut)) + escaper.end();
      expect(out).toBe('x\\u009by\r\nz\\x0d');
    }
  });
});
