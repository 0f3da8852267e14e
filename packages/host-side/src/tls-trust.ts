import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { Bind } from './view.js';
import { isInside } from './view.js';

/**
 * Variables that configure which certificate authorities TLS clients trust (a TLS-inspecting
 * proxy's CA, a company CA). They are configuration, not secrets, and without them every TLS
 * client in the sandbox fails where the host's succeed, so they are forwarded by default.
 */
export const TLS_TRUST_VARIABLES = [
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
] as const;

/** The trust variables set on the host, by name only (no I/O: for the start-up line). */
export function tlsTrustNames(hostEnv: Readonly<Record<string, string | undefined>>): string[] {
  return TLS_TRUST_VARIABLES.filter((name) => Boolean(hostEnv[name]));
}

export interface TlsTrustEntry {
  readonly name: string;
  readonly value: string;
  /** Read-only binds of the files or directories the variable names, at the same paths. */
  readonly binds: readonly Bind[];
}

export interface TlsTrust {
  readonly entries: readonly TlsTrustEntry[];
  readonly notes: readonly string[];
}

/**
 * What crosses for the host's TLS trust: each variable whose every path is absolute and exists
 * (a file, or a directory for SSL_CERT_DIR, which may list several), and binds for those paths.
 * A directory that holds a hidden root (`/`, `/home`, the user's home) is never made visible.
 */
export function planTlsTrust(
  hostEnv: Readonly<Record<string, string | undefined>>,
  hiddenRoots: readonly string[],
): TlsTrust {
  const entries: TlsTrustEntry[] = [];
  const notes: string[] = [];
  for (const name of tlsTrustNames(hostEnv)) {
    const value = hostEnv[name] as string;
    const paths = name === 'SSL_CERT_DIR' ? value.split(':').filter(Boolean) : [value];
    const wanted = name === 'SSL_CERT_DIR' ? 'directory' : 'file';
    const problem = paths.map((path) => check(path, wanted, hiddenRoots)).find(Boolean);
    if (problem) {
      notes.push(`host TLS trust: ${name} not forwarded: ${problem}`);
      continue;
    }
    entries.push({ name, value, binds: paths.map((path) => ({ source: path, dest: path, mode: 'ro' })) });
  }
  return { entries, notes };
}

function check(
  path: string,
  wanted: 'file' | 'directory',
  hiddenRoots: readonly string[],
): string | undefined {
  if (!isAbsolute(path)) return 'not an absolute path';
  let isDirectory: boolean;
  try {
    const stat = statSync(path);
    if (!stat.isFile() && !stat.isDirectory()) return 'not a file or directory';
    isDirectory = stat.isDirectory();
  } catch {
    return 'does not exist';
  }
  if (isDirectory !== (wanted === 'directory')) return `not a ${wanted}`;
  if (isDirectory && (path === '/' || hiddenRoots.some((root) => isInside(root, path)))) {
    return 'a directory that holds private files';
  }
  return undefined;
}
