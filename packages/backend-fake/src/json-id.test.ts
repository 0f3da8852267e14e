import { describe, expect, it } from 'vitest';
import { rawJsonMember } from './json-id.js';

describe('rawJsonMember', () => {
  it('returns the source text of the member, untouched', () => {
    expect(rawJsonMember('{"id":9007199254740993}', 'id')).toBe('9007199254740993');
    expect(rawJsonMember('{"id":1.50E+3,"x":1}', 'id')).toBe('1.50E+3');
    expect(rawJsonMember('{"id":-0}', 'id')).toBe('-0');
    expect(rawJsonMember('{"id":"a\\"b\\\\"}', 'id')).toBe('"a\\"b\\\\"');
    expect(rawJsonMember('{"id":null}', 'id')).toBe('null');
    expect(rawJsonMember('{"id":{"a":[1,"}"]}}', 'id')).toBe('{"a":[1,"}"]}');
  });

  it('skips nested members, strings that look like keys, and whitespace', () => {
    const text = ' {\n "params" : { "id" : 1, "s": "\\"id\\":2" } ,\t"list":[{"id":3}], "id"\r\n:  "top" } ';
    expect(rawJsonMember(text, 'id')).toBe('"top"');
  });

  it('decodes escaped keys and takes the last duplicate, as JSON.parse does', () => {
    expect(rawJsonMember('{"\\u0069d":5}', 'id')).toBe('5');
    const text = '{"id":1,"id":2}';
    expect(rawJsonMember(text, 'id')).toBe('2');
    expect((JSON.parse(text) as { id: number }).id).toBe(2);
  });

  it('returns undefined without such a member or for a non-object', () => {
    expect(rawJsonMember('{"method":"x"}', 'id')).toBeUndefined();
    expect(rawJsonMember('{}', 'id')).toBeUndefined();
    expect(rawJsonMember('[{"id":1}]', 'id')).toBeUndefined();
    expect(rawJsonMember('"id"', 'id')).toBeUndefined();
  });
});
