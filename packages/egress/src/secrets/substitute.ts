/**
 * Where a stand-in is replaced by the real value, in a request to a bound host: the request
 * target, credential headers (Authorization Bearer/token/Basic, API-key-style headers, Cookie),
 * and the body only when the secret opted in. Anywhere else it stays the stand-in, and is misuse.
 */
import type { BoundSecret } from '@mcpsandbox/core';
import type { RequestHead } from './http1.js';

/** Header names a credential travels in: `Authorization`, `Cookie`, `X-Api-Key`, `Private-Token`, … */
export function isCredentialHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    lower === 'authorization' || lower === 'cookie' || /(api[-_]?key|token|secret|auth|key)$/.test(lower)
  );
}

export interface Substituted {
  readonly target: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Buffer;
  /** Secrets put on the wire in this request. */
  readonly used: readonly string[];
  /** Stand-ins left where they are not replaced: `header` or `body`, by secret name. */
  readonly misuse: ReadonlyArray<{ readonly name: string; readonly where: 'header' | 'body' }>;
}

export function substitute(head: RequestHead, body: Buffer, secrets: readonly BoundSecret[]): Substituted {
  const used = new Set<string>();
  const misuse: Array<{ name: string; where: 'header' | 'body' }> = [];
  let target = head.target;
  const headers: Array<[string, string]> = head.headers.map(([name, value]) => [name, value]);
  let out = body;
  for (const secret of secrets) {
    if (target.includes(secret.standIn)) {
      target = target.split(secret.standIn).join(secret.value);
      used.add(secret.name);
    }
    for (const pair of headers) {
      const [name, value] = pair;
      if (isCredentialHeader(name)) {
        const replaced = replaceCredential(value, secret);
        if (replaced !== value) {
          pair[1] = replaced;
          used.add(secret.name);
        }
      } else if (value.includes(secret.standIn)) {
        misuse.push({ name: secret.name, where: 'header' });
      }
    }
    if (out.includes(secret.standIn)) {
      if (secret.body) {
        out = Buffer.from(out.toString('latin1').split(secret.standIn).join(secret.value), 'latin1');
        used.add(secret.name);
      } else misuse.push({ name: secret.name, where: 'body' });
    }
  }
  return { target, headers, body: out, used: [...used], misuse };
}

/** A header value with the stand-in replaced, the credentials of `Basic` decoded for it. */
function replaceCredential(value: string, secret: BoundSecret): string {
  const basic = /^(Basic +)([A-Za-z0-9+/]+={0,2})$/i.exec(value);
  if (basic) {
    const decoded = Buffer.from(basic[2]!, 'base64').toString('latin1');
    if (decoded.includes(secret.standIn)) {
      const real = decoded.split(secret.standIn).join(secret.value);
      return `${basic[1]}${Buffer.from(real, 'latin1').toString('base64')}`;
    }
  }
  return value.split(secret.standIn).join(secret.value);
}

/**
 * The forms of a real value a response is searched for: as is, base64 (at each alignment,
 * standard and URL alphabets), percent-encoded (either case of hex) and JSON-escaped.
 */
export function revealingForms(value: string): string[] {
  const forms = new Set<string>([value]);
  const bytes = Buffer.from(value, 'latin1');
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const text = encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    forms.add(text);
    forms.add(text.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  const percent = encodeURIComponent(value);
  forms.add(percent);
  forms.add(percent.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  const json = JSON.stringify(value).slice(1, -1);
  forms.add(json);
  forms.add(json.replace(/\//g, '\\/'));
  forms.add(value.replace(/[^A-Za-z0-9]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
  return [...forms];
}
