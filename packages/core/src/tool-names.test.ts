import { describe, expect, it } from 'vitest';
import { ambiguousNames, toolNameSkeleton } from './tool-names.js';

describe('toolNameSkeleton', () => {
  it('reads fullwidth, case, zero-width characters and Cyrillic or Greek look-alikes as the plain name', () => {
    for (const name of [
      'echo',
      'ｅｃｈｏ',
      'ECHO',
      'Echo',
      'e\u200bcho',
      'ec\u00adho',
      'echo\ufe0f',
      '\u0435cho',
      'ech\u043e',
      'ech\u03bf',
      '\u0415CHO',
    ])
      expect(toolNameSkeleton(name), JSON.stringify(name)).toBe('echo');
  });

  it('keeps names apart that differ in ASCII, look-alike digits included', () => {
    const names = ['tool1', 'tooll', 'tool0', 'toolo', 'get_file', 'get-file', 'get.file', 'echo2'];
    expect(new Set(names.map(toolNameSkeleton)).size).toBe(names.length);
  });
});

describe('ambiguousNames', () => {
  it('names every spelling of a collision, on one page and against earlier pages', () => {
    const seen = new Map<string, Set<string>>();
    expect([...ambiguousNames(['echo', 'add', 'echo'], seen)]).toEqual(['echo']);
    expect([...ambiguousNames(['search'], seen)]).toEqual([]);
    expect(new Set(ambiguousNames(['ＡＤＤ', 'other'], seen))).toEqual(new Set(['ＡＤＤ', 'add']));
  });
});
