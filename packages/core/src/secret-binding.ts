/**
 * `--secret NAME@host[,host…][:body]`: a secret the sandbox never holds. Inside, NAME is a
 * stand-in; the egress proxy puts the real value on the wire to the bound hosts alone.
 */
import { randomInt } from 'node:crypto';
import { UsageError } from './errors.js';
import { type HostName, parseHostName } from './host-name.js';

/** One parsed `--secret`: the variable, the hosts it is for, and whether bodies are substituted. */
export interface SecretBinding {
  readonly name: string;
  readonly hosts: readonly HostName[];
  /** `:body`: the stand-in is replaced in request bodies too (else only the request line and headers). */
  readonly body: boolean;
}

/** A binding with its values: `value` stays in the host process, `standIn` is what the sandbox sees. */
export interface BoundSecret extends SecretBinding {
  readonly value: string;
  readonly standIn: string;
}

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const MAX_HOSTS = 16;
/** A value shorter than this makes a stand-in that could turn up by chance in any request. */
export const MIN_SECRET_LENGTH = 8;
const MAX_SECRET_LENGTH = 4096;

/**
 * Parses one `--secret` flag. A value on the command line (`NAME=value@host`) is refused: command
 * lines are visible to every process of the user and land in shell history. Hosts are exact DNS
 * names (no `*.suffix`: a wildcard would let the sandbox pick a name under it, one that resolves
 * where the sandbox's owner says, and receive the real value there; no IP: a certificate and a
 * grant for an address are a different surface, not built yet).
 */
export function parseSecretFlag(text: string): SecretBinding {
  const at = text.indexOf('@');
  const eq = text.indexOf('=');
  if (eq !== -1 && (at === -1 || eq < at)) {
    throw new UsageError(
      `--secret ${text.slice(0, eq)}=…: values do not go on command lines (every process of yours can read them, ` +
        `and shells keep them); export the variable and name it: --secret ${safeName(text.slice(0, eq))}@host`,
    );
  }
  if (at === -1) {
    throw new UsageError(
      `--secret needs NAME@host[,host…] (the host the secret is for), e.g. --secret GITHUB_TOKEN@api.github.com`,
    );
  }
  const name = text.slice(0, at);
  if (!VARIABLE.test(name)) {
    throw new UsageError(
      '--secret: the part before @ must be an environment variable name (letters, digits, _)',
    );
  }
  let rest = text.slice(at + 1);
  let body = false;
  if (rest.endsWith(':body')) {
    body = true;
    rest = rest.slice(0, -':body'.length);
  }
  const parts = rest.split(',');
  if (parts.length > MAX_HOSTS) throw new UsageError(`--secret ${name}: at most ${MAX_HOSTS} hosts`);
  const hosts: HostName[] = [];
  for (const part of parts) {
    if (part.startsWith('*')) {
      throw new UsageError(
        `--secret ${name}: a wildcard host is not accepted (the server could pick a name under it and receive the real value); name each host`,
      );
    }
    const host = parseHostName(part);
    if (host === undefined || /^[0-9.]+$/.test(part) || part.includes(':')) {
      throw new UsageError(
        `--secret ${name}: each host must be a DNS name (e.g. api.github.com), without a port`,
      );
    }
    if (!hosts.includes(host)) hosts.push(host);
  }
  return { name, hosts, body };
}

/** The variable name as far as it is one (for the suggestion in a refusal), else NAME. */
function safeName(text: string): string {
  return VARIABLE.test(text) ? text : 'NAME';
}

/** Takes the real value from the host environment and makes the session's stand-in. */
export function bindSecret(
  binding: SecretBinding,
  hostEnv: Readonly<Record<string, string | undefined>>,
): BoundSecret {
  const value = Object.hasOwn(hostEnv, binding.name) ? hostEnv[binding.name] : undefined;
  if (value === undefined || value === '') {
    throw new UsageError(
      `--secret ${binding.name}: the variable is not set in this environment; export it first`,
    );
  }
  if (value.length < MIN_SECRET_LENGTH || value.length > MAX_SECRET_LENGTH) {
    throw new UsageError(
      `--secret ${binding.name}: the value must be ${MIN_SECRET_LENGTH} to ${MAX_SECRET_LENGTH} characters (a shorter one could appear by chance; use --env for it)`,
    );
  }
  if (!/^[\x21-\x7e]+$/.test(value)) {
    throw new UsageError(
      `--secret ${binding.name}: the value has spaces or characters outside printable ASCII, which no header carries as is; use --env for it`,
    );
  }
  return { ...binding, value, standIn: makeStandIn(value) };
}

/** Token prefixes kept in a stand-in, for clients that check a token's form before using it. */
const KNOWN_PREFIXES = [
  'github_pat_',
  'ghp_',
  'gho_',
  'ghu_',
  'ghs_',
  'ghr_',
  'glpat-',
  'sk-proj-',
  'sk-ant-',
  'sk_live_',
  'sk_test_',
  'rk_live_',
  'sk-',
  'xoxb-',
  'xoxp-',
  'xapp-',
  'lin_api_',
  'secret_',
  'ntn_',
  'sntrys_',
];

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const DIGITS = '0123456789';

/**
 * A fresh random stand-in with the real value's length, its known prefix, and each character
 * drawn from the class of the character at that place (lower, upper, digit; any other byte is
 * kept, as a separator like `-` or `_` is part of the format). Only the form is read from the
 * value, never its random part: the stand-in says nothing of the secret beyond what the prefix
 * and its shape already said. Never equal to the value.
 */
export function makeStandIn(value: string): string {
  const prefix = KNOWN_PREFIXES.find((p) => value.startsWith(p) && value.length > p.length) ?? '';
  for (;;) {
    let out = prefix;
    for (const ch of value.slice(prefix.length)) {
      const pool = LOWER.includes(ch)
        ? LOWER
        : UPPER.includes(ch)
          ? UPPER
          : DIGITS.includes(ch)
            ? DIGITS
            : undefined;
      out += pool === undefined ? ch : pool[randomInt(pool.length)];
    }
    if (out !== value) return out;
  }
}
