import type { BoundSecret, SandboxEvent } from '@mcpsandbox/core';

/** Where a stand-in turned up that is not a bound host's credential slot. */
export type MisuseWhere = 'header' | 'body' | 'dns' | 'plain-http' | 'connect-target' | 'sni';

/**
 * Looks for stand-ins where the proxy sees traffic it does not substitute (a plain-HTTP request,
 * a CONNECT target, a DNS name): seen there, it is recorded as `secret-misuse`, never replaced.
 * Names are compared without case, as DNS compares them.
 */
export class StandInWatch {
  readonly #secrets: readonly BoundSecret[];
  readonly #onEvent: (event: SandboxEvent) => void;

  constructor(secrets: readonly BoundSecret[], onEvent: (event: SandboxEvent) => void) {
    this.#secrets = secrets;
    this.#onEvent = onEvent;
  }

  /** Records each secret whose stand-in `text` holds; true when one did. */
  check(text: string, where: MisuseWhere): boolean {
    // A name cannot hold `_` and has no case: there, only the letters and digits are compared.
    const loose = where === 'dns' || where === 'connect-target' || where === 'sni';
    const fold = (value: string) =>
      loose ? value.toLowerCase().replace(/[^a-z0-9]/g, '') : value.toLowerCase();
    const haystack = fold(text);
    let seen = false;
    for (const secret of this.#secrets) {
      if (!haystack.includes(fold(secret.standIn))) continue;
      seen = true;
      this.#onEvent({ type: 'secret-misuse', name: secret.name, where });
    }
    return seen;
  }
}

const WHERE_TEXT: Record<MisuseWhere, string> = {
  header: 'a header that carries no credential',
  body: 'a request body (not opted in with :body)',
  dns: 'a DNS name',
  'plain-http': 'a plain-HTTP request',
  'connect-target': 'a connection target',
  sni: 'a TLS server name',
};

/**
 * Says on stderr, once per secret and place, what the trace records of `--secret`: a stand-in
 * where it is not replaced, a reply cut off for carrying a real value, a request refused. Every
 * line is built from the secret's name and fixed words, never from the traffic.
 */
export class SecretReporter {
  readonly #warn: (line: string) => void;
  readonly #said = new Set<string>();

  constructor(warn: (line: string) => void) {
    this.#warn = warn;
  }

  observe(event: SandboxEvent): void {
    const name =
      typeof event.name === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(event.name) ? event.name : undefined;
    if (
      event.type === 'secret-misuse' &&
      name &&
      typeof event.where === 'string' &&
      event.where in WHERE_TEXT
    ) {
      this.#once(
        `misuse ${name} ${event.where}`,
        `the server sent the stand-in for ${name} in ${WHERE_TEXT[event.where as MisuseWhere]}: not replaced (the real value goes only to its bound hosts' credential headers)`,
      );
    } else if (event.type === 'secret-reply-cut') {
      this.#once(
        `cut ${name ?? ''}`,
        `a reply was cut off: ${event.reason === 'the reply carried the real value' ? `it carried the real value of ${name ?? 'a secret'}` : 'it could not be searched for the secret (compressed)'}`,
      );
    } else if (event.type === 'secret-tls-failed') {
      this.#once(
        'tls',
        'a connection to a host with a bound --secret did not complete TLS with the session CA (the client does not speak TLS there, pins a certificate or uses a client certificate); for such a server pass the variable with --env instead',
      );
    } else if (event.type === 'secret-request-refused') {
      this.#once(
        'refused',
        'a request to a host with a bound secret was refused: it was not plain, unambiguous HTTP/1.1 for that host (see the trace)',
      );
    }
  }

  #once(key: string, line: string): void {
    if (this.#said.has(key) || this.#said.size > 256) return;
    this.#said.add(key);
    this.#warn(line);
  }
}
