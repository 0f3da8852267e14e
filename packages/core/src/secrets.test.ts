import { describe, expect, it } from 'vitest';
import { decode, mapBack, percentDecode, unescapeJson } from './decoded-views.js';
import { base64Needles, createRedactor, MIN_REDACTED_LENGTH, REDACTED, SecretSet } from './secrets.js';

const SECRET = "pä ss/wörd&<tok>=😀+9f3b'x";

describe('decoded views', () => {
  it('unescape JSON anywhere in a line and map spans back to whole escapes', () => {
    const src = 'a\\u00e4\\/b\\ud83d\\ude00c\\q';
    const view = decode(unescapeJson, src);
    expect(view).toBe('aä/b😀c\\q');
    // "ä/" is view [1, 3): the escapes \u00e4\/ in the source.
    expect(mapBack(unescapeJson, src, [1, 3])).toEqual([1, 9]);
    // Half a surrogate pair widens to its escape.
    expect(mapBack(unescapeJson, src, [4, 5])).toEqual([10, 16]);
  });

  it('percent-decode UTF-8 in any case, + as a space, and leave what is not an escape', () => {
    expect(decode(percentDecode, 'p%C3%a4+x%2B%zz%e4%')).toBe('pä x %zz%e4%');
    expect(mapBack(percentDecode, 'p%C3%a4+x', [1, 3])).toEqual([1, 8]);
  });
});

describe('SecretSet', () => {
  it('redacts as written and as JSON.stringify writes it', () => {
    const redact = createRedactor(['s3cr"et', 'tok', 'longer-token']);
    expect(redact('a s3cr"et b')).toBe(`a ${REDACTED} b`);
    expect(redact(JSON.stringify({ v: 's3cr"et' }))).toBe(`{"v":"${REDACTED}"}`);
    expect(redact('tok stays: too short to redact; longer-token goes')).toBe(
      `tok stays: too short to redact; ${REDACTED} goes`,
    );
  });

  it('refuses values shorter than the minimum and says so', () => {
    const set = new SecretSet();
    expect(set.add('x'.repeat(MIN_REDACTED_LENGTH - 1))).toBe(false);
    expect(set.add('x'.repeat(MIN_REDACTED_LENGTH))).toBe(true);
    expect(set.size).toBe(1);
  });

  it('a secret added later is redacted by redactors made earlier', () => {
    const set = new SecretSet();
    const redact = createRedactor(set);
    expect(redact('token-abcdef')).toBe('token-abcdef');
    set.add('token-abcdef');
    expect(redact('token-abcdef')).toBe(REDACTED);
  });

  it.each([
    ['Go/Gson escapes', 'p\\u00e4 ss\\/w\\u00f6rd\\u0026\\u003ctok\\u003e\\u003d\\ud83d\\ude00+9f3b\\u0027x'],
    ['upper-case \\u escapes', "p\\u00E4 ss/w\\u00F6rd&<tok>=\\uD83D\\uDE00+9f3b'x"],
    ['JSON text inside a JSON string', JSON.stringify(JSON.stringify(SECRET).replace('ä', '\\u00e4'))],
    ['percent-encoding, + for space', 'p%c3%a4+ss%2Fw%C3%B6rd%26%3Ctok%3E%3D%F0%9F%98%80%2B9f3b%27x'],
    ['percent-encoding, %20 and a raw +', "p%C3%A4%20ss/w%C3%B6rd&<tok>=%F0%9F%98%80+9f3b'x"],
    ['a JSON-escaped URL', "p%c3%a4+ss\\/w%c3%b6rd\\u0026\\u003ctok\\u003e=%f0%9f%98%80%2b9f3b'x"],
    ['Basic auth', `Basic ${Buffer.from(`alice:${SECRET}`).toString('base64')}`],
    ['Bearer, base64url', Buffer.from(`Bearer ${SECRET}`).toString('base64url')],
    ['KEY=secret', Buffer.from(`X=1\nKEY=${SECRET}\n`).toString('base64')],
    ['base64 in a percent-encoded URL', encodeURIComponent(Buffer.from(`u:${SECRET}`).toString('base64'))],
    ['base64 with \\/ escapes', Buffer.from(`ab:${SECRET}`).toString('base64').replace(/\//g, '\\/')],
  ])('redacts %s', (_, form) => {
    const out = new SecretSet([SECRET]).redact(`before ${form} after`);
    expect(out).toContain(REDACTED);
    expect(out.startsWith('before ')).toBe(true);
    expect(out.endsWith(' after')).toBe(true);
  });

  it('base64 needles cover all three alignments, in both alphabets', () => {
    const bytes = Buffer.from('secret-value');
    const needles = base64Needles(bytes);
    for (const prefix of ['', 'a', 'ab', 'abc', 'user:', 'Bearer ']) {
      const encoded = Buffer.from(`${prefix}secret-value!`).toString('base64');
      expect(needles.some((n) => encoded.includes(n))).toBe(true);
    }
  });

  it('leaves text without secrets alone, byte for byte', () => {
    const set = new SecretSet([SECRET]);
    for (const text of [
      '',
      'plain',
      'a\\u00e4%c3%a4+b',
      'broken \\u12 %e4 %',
      JSON.stringify({ x: 'ü😀' }),
    ]) {
      expect(set.redact(text)).toBe(text);
    }
  });

  it('a cut text loses the tail where a cut secret could start', () => {
    const set = new SecretSet(['secret-value-123']);
    const head = `${'x'.repeat(1000)} secret-val`;
    const out = set.redactCut(head);
    expect(out).not.toContain('secret-val');
    expect(out.length).toBeGreaterThan(500);
    expect(new SecretSet().redactCut(head)).toBe(head);
  });

  it('hostile 8 MiB lines (escapes of escapes, backslashes, near misses, 200k matches) come back redacted in one pass', () => {
    const MiB = 1024 * 1024;
    const set = new SecretSet([SECRET, `${'a'.repeat(40)}b`]);
    const escaped = JSON.stringify(SECRET).slice(1, -1).replace('ä', '\\u00e4');
    const lines = {
      nested: '\\\\\\\\u0061'.repeat(MiB / 2),
      backslashes: '\\'.repeat(8 * MiB),
      percent: '%c3%a4+'.repeat(MiB),
      nearMiss: 'a'.repeat(8 * MiB),
      matches: `${escaped} `.repeat((8 * MiB) / 40),
    };
    for (const [name, line] of Object.entries(lines)) {
      const out = set.redact(line);
      if (name === 'matches') {
        expect(out).toBe(`${REDACTED} `.repeat((8 * MiB) / 40));
      } else expect(out, name).toBe(line);
    }
  }, 60_000);
});
