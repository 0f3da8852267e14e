import { describe, expect, it } from 'vitest';
import { SeatbeltPathError } from '../src/errors.js';
import { generateProfile } from '../src/profile/generate.js';
import { decide, parseProfile } from '../src/sbpl/evaluate.js';
import { basePlan, HOST_HOME } from './plans.js';

/** The profile's rule structure: action and operations of each rule, and the kinds of its filters. */
const shape = (text: string) =>
  parseProfile(text).rules.map((rule) => {
    const kinds = new Set(rule.filters.map((f) => (Array.isArray(f) ? JSON.stringify(f[0]) : '?')));
    return `${rule.action} ${rule.ops.join(' ')} ${[...kinds].join(',')}`;
  });

/** Every string that appears as the argument of a `subpath` filter. */
const subpaths = (text: string) =>
  parseProfile(text).rules.flatMap((rule) =>
    rule.filters.flatMap((f) =>
      Array.isArray(f) && JSON.stringify(f[0]) === JSON.stringify({ kind: 'symbol', value: 'subpath' })
        ? [(f[1] as { value: string }).value]
        : [],
    ),
  );

describe('a mount path is an attacker-chosen string in the profile', () => {
  const benign = `${HOST_HOME}/project`;
  const hostile = [
    `${HOST_HOME}/p") (allow file-read* (subpath "/")) (deny default (with message "x`,
    `${HOST_HOME}/p")) (allow file-read* (subpath "/x`,
    `${HOST_HOME}/back\\slash"quote`,
  ];

  for (const path of hostile) {
    it(`${JSON.stringify(path)} stays one literal and changes no rule`, () => {
      const plain = generateProfile({ ...basePlan, readWrite: [benign] });
      const attacked = generateProfile({ ...basePlan, readWrite: [path] });
      expect(shape(attacked)).toEqual(shape(plain));
      expect(subpaths(attacked)).toContain(path);
      const profile = parseProfile(attacked);
      // The whole disk stays unreadable; the mount itself, under its exact name, is writable.
      expect(decide(profile, { op: 'file-read-data', path: `${HOST_HOME}/.ssh/id_ed25519` }).action).toBe(
        'deny',
      );
      expect(decide(profile, { op: 'file-write-data', path: `${path}/file` }).action).toBe('allow');
      expect(decide(profile, { op: 'file-write-data', path: `${path}/.git/hooks/pre-commit` }).action).toBe(
        'deny',
      );
    });
  }

  for (const [label, path] of [
    ['a newline', `${HOST_HOME}/p\n(allow file-read* (subpath "/"))`],
    ['a NUL', `${HOST_HOME}/p\u0000/x`],
    ['a carriage return', `${HOST_HOME}/p\r`],
  ] as const) {
    it(`a path with ${label} is refused with a typed error`, () => {
      expect(() => generateProfile({ ...basePlan, readWrite: [path] })).toThrow(SeatbeltPathError);
      expect(() => generateProfile({ ...basePlan, readOnly: [path] })).toThrow(/control character/);
    });
  }

  it('a relative, dotted or firmlink path is refused, never widened', () => {
    for (const path of [
      'project',
      `${HOST_HOME}/../..`,
      `${HOST_HOME}//x`,
      `/System/Volumes/Data${HOST_HOME}/p`,
    ]) {
      expect(() => generateProfile({ ...basePlan, readWrite: [path] })).toThrow(SeatbeltPathError);
    }
  });

  it('the session tag cannot carry SBPL either', () => {
    expect(() => generateProfile({ ...basePlan, tag: 'x")) (allow default' })).toThrow(SeatbeltPathError);
  });
});
