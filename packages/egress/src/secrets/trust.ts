/**
 * The trust a `--secret` session's TLS clients read, shared by every OS engine: the session CA
 * (made here, loaded only when a secret is bound) written beside the host's own trust into a
 * directory of the session's that only the host writes. Each engine shows that directory
 * read-only to the server alone (never to install or setup steps) and sets the variables that name it.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BoundSecret, HostName } from '@mcpsandbox/core';
import type { SecretRouting } from '../proxy.js';
import { SessionCa } from './ca.js';

/** The system bundle a Debian-like, Red Hat-like or macOS host has; else the CA alone. */
const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/cert.pem',
];

export interface SecretTrustOptions {
  readonly secrets: readonly BoundSecret[];
  /** A directory the host creates (it must not exist): the session's own, under a root the sandbox cannot write. */
  readonly dir: string;
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  /** The host's NODE_EXTRA_CA_CERTS and SSL_CERT_FILE are merged in (trust forwarding is on). */
  readonly forwardsHostTrust: boolean;
  /** Trust for bound hosts' certificates (tests); else this host's default trust. */
  readonly upstreamCa?: string;
}

export interface SecretTrust {
  /** What the session's egress proxy substitutes with. */
  readonly routing: SecretRouting;
  /** The host directory holding `node.pem` and `bundle.pem`. */
  readonly dir: string;
  /** Both files, as host paths (engines that show paths in place bind these read-only). */
  readonly files: readonly string[];
  /** The trust variables for a server that sees `dir` at `insideDir`. */
  envAt(insideDir: string): Record<string, string>;
}

/**
 * Makes the session CA and writes `node.pem` (the host's NODE_EXTRA_CA_CERTS, then the CA: Node
 * adds it to its own roots) and `bundle.pem` (the host's SSL_CERT_FILE or system bundle, then the
 * CA: OpenSSL, curl, Python's ssl, requests and httpx replace their roots with it).
 */
export async function writeSecretTrust(options: SecretTrustOptions): Promise<SecretTrust> {
  const { secrets, dir, hostEnv, forwardsHostTrust } = options;
  const hosts = [...new Set(secrets.flatMap((secret) => secret.hosts))] as HostName[];
  const ca = await SessionCa.create(hosts);
  // While the server starts: the bound hosts' leaves, and the code their first connection runs.
  ca.prepare();
  import('./intercept.js')
    .then((intercept) => intercept.upstreamContext(options.upstreamCa))
    .catch(() => undefined);
  // Not recursive: a directory that exists already was not made by this session.
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const hostNode = forwardsHostTrust ? readPem(hostEnv.NODE_EXTRA_CA_CERTS) : '';
  const base =
    (forwardsHostTrust ? readPem(hostEnv.SSL_CERT_FILE) : '') ||
    SYSTEM_BUNDLES.map((path) => readPem(path)).find(Boolean) ||
    '';
  const node = join(dir, 'node.pem');
  const bundle = join(dir, 'bundle.pem');
  writeFileSync(node, `${hostNode}${ca.pem}\n`, { mode: 0o644, flag: 'wx' });
  writeFileSync(bundle, `${base}${ca.pem}\n`, { mode: 0o644, flag: 'wx' });
  return {
    routing: { bound: secrets, ca, ...(options.upstreamCa ? { upstreamCa: options.upstreamCa } : {}) },
    dir,
    files: [node, bundle],
    envAt: (insideDir) => ({
      NODE_EXTRA_CA_CERTS: `${insideDir}/node.pem`,
      SSL_CERT_FILE: `${insideDir}/bundle.pem`,
      REQUESTS_CA_BUNDLE: `${insideDir}/bundle.pem`,
      CURL_CA_BUNDLE: `${insideDir}/bundle.pem`,
    }),
  };
}

/** A PEM file of the host's trust configuration, ending in a newline; empty when unreadable. */
function readPem(path: string | undefined): string {
  if (path === undefined || !path.startsWith('/')) return '';
  try {
    const text = readFileSync(path, 'utf8');
    if (!text.includes('-----BEGIN CERTIFICATE-----')) return '';
    return text.endsWith('\n') ? text : `${text}\n`;
  } catch {
    return '';
  }
}
