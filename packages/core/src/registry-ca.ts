/**
 * The `ca` option of a registry request that trusts Node's roots and the CA files npm trusts.
 * Handing TLS a list of certificates costs parsing every one of them (tens of milliseconds for a
 * system bundle, on every start that checks a pin), so the list is avoided when it would change
 * nothing: when the certificates it holds are exactly those of Node's default store (its roots
 * and this process's NODE_EXTRA_CA_CERTS, which Node loaded at start). Otherwise each
 * certificate goes in once.
 */

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/** The certificates of PEM texts, each once (by its base64), or undefined if a text holds other blocks. */
function certificates(texts: readonly string[]): Map<string, string> | undefined {
  const found = new Map<string, string>();
  for (const text of texts) {
    for (const match of text.matchAll(BLOCK)) {
      // TRUSTED CERTIFICATE and other blocks mean more than a certificate: handed over as they are.
      if (match[1] !== 'CERTIFICATE') return undefined;
      const key = (match[2] as string).replace(/\s+/g, '');
      if (!found.has(key)) found.set(key, match[0]);
    }
  }
  return found;
}

export interface DefaultStore {
  /** Node's bundled roots (`tls.rootCertificates`). */
  readonly roots: readonly string[];
  /** The text of the file NODE_EXTRA_CA_CERTS named when this process started, if any. */
  readonly extra: string | undefined;
  /** Whether Node was told to take its roots elsewhere (`--use-openssl-ca`, `--use-system-ca`). */
  readonly otherRoots: boolean;
}

/** The `ca` to pass (undefined: Node's default store is exactly this trust). */
export function registryCa(files: readonly string[], store: DefaultStore): string[] | undefined {
  const wanted = certificates([...store.roots, ...files]);
  if (!wanted) return [...store.roots, ...files];
  const defaults = store.otherRoots ? undefined : certificates([...store.roots, store.extra ?? '']);
  if (defaults && defaults.size === wanted.size && [...wanted.keys()].every((key) => defaults.has(key))) {
    return undefined;
  }
  return [...wanted.values()];
}

/** Whether this process's Node takes its roots from somewhere other than its bundled store. */
export function nodeUsesOtherRoots(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((arg) =>
    /^--use-(openssl|system)-ca$/.test(arg),
  );
}
