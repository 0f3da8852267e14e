/**
 * `--secret` in a local sandbox: the session CA (loaded only when a secret is bound), and the
 * trust files the sandbox's TLS clients read, merged with the host's trust as it crosses today.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BoundSecret, HostName } from '@mcpsandbox/core';
import type { SecretRouting } from '@mcpsandbox/egress';
import type { Bind } from '@mcpsandbox/host-side';

/** Where the trust files are seen inside. */
export const SANDBOX_TRUST_DIR = '/run/mcp-sandbox-trust';
/** The system bundle a Debian-like view has; other layouts fall back to the CA alone. */
const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/cert.pem',
];

export interface SecretSession {
  readonly routing: SecretRouting;
  readonly bind: Bind;
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Makes the session CA and writes, in a directory of the session's own that only the host writes:
 * `node.pem` (the CA, after the host's NODE_EXTRA_CA_CERTS) for NODE_EXTRA_CA_CERTS, and
 * `bundle.pem` (the host's SSL_CERT_FILE or system bundle, then the CA) for OpenSSL, curl, Python.
 */
export async function startSecretSession(
  secrets: readonly BoundSecret[],
  sessionRoot: string,
  hostEnv: Readonly<Record<string, string | undefined>>,
  forwardsHostTrust: boolean,
  upstreamCa?: string,
): Promise<SecretSession> {
  const hosts = [...new Set(secrets.flatMap((secret) => secret.hosts))] as HostName[];
  const { SessionCa } = await import('@mcpsandbox/egress/secrets');
  const ca = await SessionCa.create(hosts);
  const dir = join(sessionRoot, 'trust');
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const hostNode = forwardsHostTrust ? readPem(hostEnv.NODE_EXTRA_CA_CERTS) : '';
  const base =
    (forwardsHostTrust ? readPem(hostEnv.SSL_CERT_FILE) : '') ||
    SYSTEM_BUNDLES.map((path) => readPem(path)).find(Boolean) ||
    '';
  writeFileSync(join(dir, 'node.pem'), `${hostNode}${ca.pem}\n`, { mode: 0o644, flag: 'wx' });
  writeFileSync(join(dir, 'bundle.pem'), `${base}${ca.pem}\n`, { mode: 0o644, flag: 'wx' });
  const bundle = `${SANDBOX_TRUST_DIR}/bundle.pem`;
  return {
    routing: { bound: secrets, ca, ...(upstreamCa ? { upstreamCa } : {}) },
    bind: { source: dir, dest: SANDBOX_TRUST_DIR, mode: 'ro' },
    env: {
      NODE_EXTRA_CA_CERTS: `${SANDBOX_TRUST_DIR}/node.pem`,
      SSL_CERT_FILE: bundle,
      REQUESTS_CA_BUNDLE: bundle,
      CURL_CA_BUNDLE: bundle,
    },
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
