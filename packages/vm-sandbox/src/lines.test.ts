import { describe, expect, it } from 'vitest';
import { LineSplitter } from './lines.js';

describe('LineSplitter', () => {
  it('joins lines across chunks, with a UTF-8 character split between them', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter(100);
    const bytes = Buffer.from('a\nbé\n\nlast');
    for (let i = 0; i < bytes.length; i++) splitter.push(bytes.subarray(i, i + 1), (l) => lines.push(l));
    splitter.push(Buffer.from('\n'), (l) => lines.push(l));
    expect(lines).toEqual(['a', 'bé', '', 'last']);
  });

  it('says when an unfinished line passes the cap', () => {
    const splitter = new LineSplitter(4);
    expect(splitter.push(Buffer.from('12'), () => undefined)).toBe(true);
    expect(splitter.push(Buffer.from('345'), () => undefined)).toBe(false);
  });
});
