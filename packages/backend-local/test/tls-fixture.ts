import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  readonly dir: string;
  /** The CA certificate a sandboxed client must trust (PEM file). */
  readonly caFile: string;
  readonly key: Buffer;
  readonly cert: Buffer;
  dispose(): void;
}

/**
 * A throwaway CA and a server certificate for `names`, made with the openssl CLI in a directory
 * anyone may read (as root the sandbox runs as nobody and must still read the CA through a bind).
 */
export function makeTestCa(names: readonly string[]): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-ca-'));
  chmodSync(dir, 0o755);
  const file = (name: string) => join(dir, name);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=mcp-sandbox test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  ssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=${names[0]}`,
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
  );
  writeFileSync(
    file('ext.cnf'),
    `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\nextendedKeyUsage=serverAuth\n`,
  );
  ssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    file('ext.cnf'),
    '-out',
    file('server.pem'),
  );
  chmodSync(file('ca.pem'), 0o644);
  return {
    dir,
    caFile: file('ca.pem'),
    key: readFileSync(file('server.key')),
    cert: readFileSync(file('server.pem')),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
