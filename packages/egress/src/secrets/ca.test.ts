import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer, connect as tlsConnect } from 'node:tls';
import { type HostName, parseHostName } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import { SessionCa } from './ca.js';

const API = parseHostName('api.example.com') as HostName;
const OTHER = parseHostName('other.example.com') as HostName;

/** A TLS handshake on loopback with `cert`, as a client that trusts only `ca` and asks for `name`. */
async function handshake(ca: string, cert: { cert: string; key: string }, name: string): Promise<string> {
  const server = createTlsServer({ ...cert, ALPNProtocols: ['http/1.1'] }, (socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await new Promise<string>((resolve) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: (server.address() as AddressInfo).port,
        servername: name,
        ca,
      });
      socket.on('secureConnect', () => {
        resolve('ok');
        socket.destroy();
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
  } finally {
    server.close();
  }
}

describe('SessionCa', () => {
  it('issues a P-256 leaf for a bound host that a client trusting only the CA accepts', async () => {
    const ca = await SessionCa.create([API]);
    const leaf = await ca.leaf(API);
    const parsed = new X509Certificate(leaf.cert);
    expect(parsed.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(parsed.subjectAltName).toBe('DNS:api.example.com');
    expect(Date.parse(parsed.validTo) - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000 + 1000);
    expect(new X509Certificate(ca.pem).ca).toBe(true);
    expect(await handshake(ca.pem, leaf, 'api.example.com')).toBe('ok');
    // The same leaf, asked for as another name: the client refuses it.
    expect(await handshake(ca.pem, leaf, 'other.example.com')).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
  });

  it('signs for no host that is not bound, and its name constraints refuse one signed anyway', async () => {
    const ca = await SessionCa.create([API]);
    await expect(ca.leaf(OTHER)).rejects.toThrow('not a bound host');
    // The CA certificate carries a critical nameConstraints extension (OID 2.5.29.30).
    const text = new X509Certificate(ca.pem).raw.toString('hex');
    expect(text).toContain('551d1e'); // 2.5.29.30
  });

  it('makes a fresh CA per session', async () => {
    const a = await SessionCa.create([API]);
    const b = await SessionCa.create([API]);
    expect(a.pem).not.toBe(b.pem);
    expect(await handshake(a.pem, await b.leaf(API), 'api.example.com')).not.toBe('ok');
  });
});
