import { lookup } from 'node:dns/promises';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { check, RUNS, SEED } from '../test/property.js';
import { grantFlagValue, parseHost, parseHostName, parseIpLiteral } from './host-name.js';

describe('parseHostName', () => {
  it('takes LDH names and A-labels, lowered, a trailing dot dropped', () => {
    expect(parseHostName('registry.npmjs.org')).toBe('registry.npmjs.org');
    expect(parseHostName('API.Example.COM.')).toBe('api.example.com');
    expect(parseHostName('xn--bcher-kva.example')).toBe('xn--bcher-kva.example');
    expect(parseHostName('localhost')).toBe('localhost');
    expect(parseHostName('a-b.c0')).toBe('a-b.c0');
    expect(parseHostName('203.0.113.7.granted.test')).toBe('203.0.113.7.granted.test');
  });

  it('refuses a NUL, shell characters, controls, spaces, non-ASCII and empty labels', () => {
    for (const text of [
      '203.0.113.7\0.granted.test',
      '7\0',
      'x;{touch,m};x',
      'a b.example',
      'a\tb.example',
      'a\r\nb.example',
      'a\x1b[31m.example',
      'bücher.example',
      'example.\u212Aom',
      'a..b',
      '.a.example',
      '..',
      '.',
      '',
      'a.example..',
      '-a.example',
      'a-.example',
      'a_b.example',
      '*.example',
      'a/b',
      'a:80',
      '[::1]',
      'a%2eb',
      '$(id).example',
      '`id`.example',
      "a'b.example",
    ]) {
      expect(parseHostName(text), JSON.stringify(text)).toBeUndefined();
    }
  });

  it('refuses names a resolver reads as a number', () => {
    for (const text of ['127.1', '0x7f.1', '2130706433', '1.2.3.4', 'a.0x10', 'example.123']) {
      expect(parseHostName(text), text).toBeUndefined();
    }
  });

  it('holds labels to 63 characters and names to 253', () => {
    const label63 = 'a'.repeat(63);
    expect(parseHostName(`${label63}.example`)).toBe(`${label63}.example`);
    expect(parseHostName(`${label63}a.example`)).toBeUndefined();
    const name253 = `${'a'.repeat(61)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}`;
    expect(name253.length).toBe(253);
    expect(parseHostName(name253)).toBe(name253);
    expect(parseHostName(`${name253}.`)).toBe(name253);
    expect(parseHostName(`a${name253}`)).toBeUndefined();
  });
});

describe('parseIpLiteral and parseHost', () => {
  it('takes dotted quads and IPv6, brackets dropped, nothing else', () => {
    expect(parseIpLiteral('203.0.113.7')).toBe('203.0.113.7');
    expect(parseIpLiteral('[2001:DB8::1]')).toBe('2001:db8::1');
    expect(parseIpLiteral('::ffff:127.0.0.1')).toBe('::ffff:127.0.0.1');
    for (const text of [
      '01.2.3.4',
      '1.2.3',
      '256.1.1.1',
      'fe80::1%eth0',
      '[::1',
      '::1]',
      '1.2.3.4\0',
      ' ::1',
    ]) {
      expect(parseIpLiteral(text), JSON.stringify(text)).toBeUndefined();
    }
    expect(parseHost('Example.COM')).toEqual({ kind: 'name', value: 'example.com' });
    expect(parseHost('::1')).toEqual({ kind: 'ip', value: '::1', family: 6 });
    expect(parseHost('10.0.0.1')).toEqual({ kind: 'ip', value: '10.0.0.1', family: 4 });
    expect(parseHost('x;{touch,m};x')).toBeUndefined();
  });

  it('builds flag values from validated hosts only', () => {
    const name = parseHost('api.example.com');
    const v6 = parseHost('::1');
    if (!name || !v6) throw new Error('unparsed');
    expect(grantFlagValue(name, 443)).toBe('api.example.com');
    expect(grantFlagValue(name, 80)).toBe('api.example.com');
    expect(grantFlagValue(name, 8080)).toBe('api.example.com:8080');
    expect(grantFlagValue(name)).toBe('api.example.com');
    expect(grantFlagValue(v6, 9000)).toBe('[::1]:9000');
  });

  it('a name that parses is what the host resolver looks up, byte for byte', async () => {
    // The NUL attack: getaddrinfo stops at the NUL and resolves the IP in front of it.
    await expect(lookup('203.0.113.7\0.granted.test')).resolves.toMatchObject({ address: '203.0.113.7' });
    expect(parseHostName('203.0.113.7\0.granted.test')).toBeUndefined();
  });
});

describe(`host-name parser properties (seed ${SEED})`, () => {
  const anyText = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc
      .array(
        fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,8}$/), fc.constantFrom('\0', ';', ' ', '{', '_', '%', 'ü')),
        {
          maxLength: 8,
        },
      )
      .map((parts) => parts.join('.')),
  );

  it('what parses holds only LDH characters and dots, and parses to itself', () => {
    check(
      fc.property(anyText, (text) => {
        const name = parseHostName(text);
        if (name === undefined) return;
        expect(name).toMatch(/^[a-z0-9.-]{1,253}$/);
        expect(parseHostName(name)).toBe(name);
        expect(name).toBe(text.toLowerCase().replace(/\.$/, ''));
      }),
    );
  });

  it('a flag value holds nothing a POSIX shell interprets', () => {
    check(
      fc.property(anyText, fc.integer({ min: 1, max: 65535 }), (text, port) => {
        const host = parseHost(text);
        if (host === undefined) return;
        expect(grantFlagValue(host, port)).toMatch(/^[a-z0-9.:[\]-]+$/);
      }),
      RUNS,
    );
  });

  it('any name built of valid labels parses', () => {
    const label = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/);
    check(
      fc.property(fc.array(label, { minLength: 1, maxLength: 6 }), (labels) => {
        expect(parseHostName(labels.join('.'))).toBe(labels.join('.'));
      }),
    );
  });
});
