/**
 * The per-session certificate authority of `--secret`: loaded only when a session binds a secret.
 * Its key is made non-extractable inside this process and never written anywhere; the sandbox
 * gets the certificate alone. Name-constrained to the bound hosts, so that even a leaked key
 * could sign for nothing else; leaf certificates are short-lived ECDSA P-256, one per bound host.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { HostName } from '@mcpsandbox/core';
import { AsnConvert } from '@peculiar/asn1-schema';
import {
  GeneralName,
  GeneralSubtree,
  GeneralSubtrees,
  id_ce_nameConstraints,
  NameConstraints,
} from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
/** The session's TTL is bounded elsewhere; the certificates outlive no day. */
const LIFETIME_MS = 24 * 3600 * 1000;
/** Clock skew between host and sandbox is none (one kernel), but a minute back costs nothing. */
const SKEW_MS = 60 * 1000;

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
/** The library's provider type names the DOM's Crypto; Node's webcrypto is that object. */
const crypto = webcrypto as unknown as NonNullable<
  Parameters<typeof x509.X509CertificateGenerator.create>[1]
>;

export interface LeafCertificate {
  /** PEM certificate chain: the leaf, then the session CA. */
  readonly cert: string;
  /** PEM PKCS#8 key of the leaf (held by the TLS server in this process only). */
  readonly key: string;
  /** Both, parsed once: every connection to the host ends its TLS with this context. */
  readonly context: SecureContext;
}

export class SessionCa {
  readonly #key: CryptoKey;
  readonly #cert: x509.X509Certificate;
  readonly #hosts: readonly HostName[];
  readonly #leaves = new Map<HostName, Promise<LeafCertificate>>();

  private constructor(key: CryptoKey, cert: x509.X509Certificate, hosts: readonly HostName[]) {
    this.#key = key;
    this.#cert = cert;
    this.#hosts = hosts;
  }

  static async create(hosts: readonly HostName[], now = Date.now()): Promise<SessionCa> {
    const keys = (await webcrypto.subtle.generateKey(ALGORITHM, false, ['sign', 'verify'])) as CryptoKeyPair;
    const permitted = new GeneralSubtrees(
      hosts.map((host) => new GeneralSubtree({ base: new GeneralName({ dNSName: host }) })),
    );
    const constraints = new x509.Extension(
      id_ce_nameConstraints,
      true,
      AsnConvert.serialize(new NameConstraints({ permittedSubtrees: permitted })),
    );
    const cert = await x509.X509CertificateGenerator.createSelfSigned(
      {
        name: 'CN=mcp-sandbox session CA, O=mcp-sandbox',
        notBefore: new Date(now - SKEW_MS),
        notAfter: new Date(now + LIFETIME_MS),
        keys,
        signingAlgorithm: ALGORITHM,
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
          constraints,
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
        ],
      },
      crypto,
    );
    return new SessionCa(keys.privateKey, cert, hosts);
  }

  /**
   * Issues every bound host's leaf now, while the server starts, so that its first request pays
   * no key generation or signing. A failure here is the first request's to report.
   */
  prepare(): void {
    for (const host of this.#hosts) this.leaf(host).catch(() => undefined);
  }

  /** The CA certificate the sandbox trusts. */
  get pem(): string {
    return this.#cert.toString('pem');
  }

  /** A leaf for `host`, made once per session; only for a bound host. */
  leaf(host: HostName): Promise<LeafCertificate> {
    if (!this.#hosts.includes(host)) return Promise.reject(new Error('not a bound host'));
    let leaf = this.#leaves.get(host);
    if (leaf === undefined) {
      leaf = this.#issue(host);
      this.#leaves.set(host, leaf);
    }
    return leaf;
  }

  async #issue(host: HostName, now = Date.now()): Promise<LeafCertificate> {
    const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
    const cert = await x509.X509CertificateGenerator.create(
      {
        subject: `CN=${host}`,
        issuer: this.#cert.subject,
        notBefore: new Date(now - SKEW_MS),
        notAfter: new Date(now + LIFETIME_MS),
        publicKey: keys.publicKey,
        signingKey: this.#key,
        signingAlgorithm: ALGORITHM,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
          new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }], false),
          await x509.AuthorityKeyIdentifierExtension.create(this.#cert, false, crypto),
        ],
      },
      crypto,
    );
    const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
    const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
    const chain = `${cert.toString('pem')}\n${this.pem}\n`;
    return { cert: chain, key, context: createSecureContext({ cert: chain, key }) };
  }
}
