import { rootCertificates } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { nodeUsesOtherRoots, registryCa } from './registry-ca.js';

const roots = rootCertificates.slice(0, 3);
const [a, b, c] = roots as [string, string, string];
// A certificate Node's roots do not hold: one of the roots with its body changed (never parsed here).
const other = c.replace(/\n[A-Za-z0-9+/]{10}/, '\nQUJDREVGR0');
/** A bundle as a distribution writes it: 64-column lines, a comment before each certificate. */
const bundle = (...pems: string[]) =>
  pems.map((pem, i) => `# cert ${i}\n${pem.replace(/(?<=^[^-\n]{64})/gm, '\n')}\n`).join('');

describe('registryCa', () => {
  it("passes no list when the files hold what Node's default store holds (its roots and this process's extra file)", () => {
    const store = { roots, extra: bundle(other), otherRoots: false };
    expect(registryCa([bundle(other)], store)).toBeUndefined();
    expect(registryCa([bundle(a, b, other), bundle(other)], store)).toBeUndefined();
  });

  it('passes each certificate once when the files trust more than the default store', () => {
    const store = { roots, extra: undefined, otherRoots: false };
    const ca = registryCa([bundle(a, other), bundle(other)], store);
    expect(ca).toHaveLength(4);
    expect(ca?.slice(0, 3)).toEqual(roots);
    expect(ca?.[3]?.replace(/\s+/g, '')).toBe(other.replace(/\s+/g, ''));
  });

  it("passes the list when the default store trusts more than asked (this process's extra file is not among them)", () => {
    const store = { roots, extra: bundle(other), otherRoots: false };
    expect(registryCa([bundle(a)], store)).toEqual(roots);
  });

  it('passes the list when Node takes its roots elsewhere, or a file holds other blocks than certificates', () => {
    expect(registryCa([bundle(other)], { roots, extra: bundle(other), otherRoots: true })).toHaveLength(4);
    const trusted = other.replaceAll('CERTIFICATE', 'TRUSTED CERTIFICATE');
    const store = { roots, extra: trusted, otherRoots: false };
    expect(registryCa([trusted], store)).toEqual([...roots, trusted]);
  });

  it('sees --use-openssl-ca and --use-system-ca in the arguments or NODE_OPTIONS', () => {
    expect(nodeUsesOtherRoots([], undefined)).toBe(false);
    expect(nodeUsesOtherRoots(['--use-openssl-ca'], undefined)).toBe(true);
    expect(nodeUsesOtherRoots([], '--max-old-space-size=100 --use-system-ca')).toBe(true);
    expect(nodeUsesOtherRoots([], '--use-bundled-ca')).toBe(false);
  });
});
