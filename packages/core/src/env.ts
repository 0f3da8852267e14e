import { UsageError } from './errors.js';

export interface EnvAllowlist {
  /** What crosses into the sandbox, and nothing else. */
  readonly env: Record<string, string>;
  /** Values to redact from traces and forwarded stderr. */
  readonly secrets: readonly string[];
  /** Host variables that were not forwarded. */
  readonly withheld: readonly string[];
  /** Of those, the ones whose names look like credentials (names only, never values). */
  readonly withheldSecretLike: readonly string[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SECRET_LIKE =
  /(SECRET|TOKEN|PASSW(OR)?D|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH|SESSION|COOKIE|_KEY$|^AWS_|^GH_|^GITHUB_)/i;
/** Shorter values would match everywhere in a trace; they are not treated as secrets. */
export const MIN_REDACTED_LENGTH = 4;

export function looksSecret(name: string): boolean {
  return SECRET_LIKE.test(name);
}

/**
 * Resolves `--env KEY` (forward from the host) and `--env KEY=value` (set) into the sandbox env.
 * A KEY that the host does not have is a usage error: the user expected it to cross.
 */
export function resolveEnvAllowlist(
  entries: readonly string[],
  hostEnv: Readonly<Record<string, string | undefined>>,
  /** The flag the entries came from, for the messages. */
  flag = '--env',
): EnvAllowlist {
  const env: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    const name = eq === -1 ? entry : entry.slice(0, eq);
    if (!NAME.test(name)) {
      throw new UsageError(
        `${flag} ${JSON.stringify(entry)}: "${name}" is not a variable name (use KEY or KEY=value)`,
      );
    }
    if (eq !== -1) {
      env[name] = entry.slice(eq + 1);
      continue;
    }
    const value = hostEnv[name];
    if (value === undefined) {
      throw new UsageError(
        `${flag} ${name}: ${name} is not set here; export it first, or pass ${flag} ${name}=<value>`,
      );
    }
    env[name] = value;
  }
  const withheld = Object.keys(hostEnv)
    .filter((name) => hostEnv[name] !== undefined && !(name in env))
    .sort();
  const secrets = [...new Set(Object.values(env).filter((v) => v.length >= MIN_REDACTED_LENGTH))];
  return { env, secrets, withheld, withheldSecretLike: withheld.filter(looksSecret) };
}

export const REDACTED = '[REDACTED]';

export type Redactor = (text: string) => string;

/** Replaces each secret, as written and as it appears escaped inside a JSON string. */
export function createRedactor(secrets: readonly string[]): Redactor {
  const needles = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_REDACTED_LENGTH) continue;
    needles.add(secret);
    needles.add(JSON.stringify(secret).slice(1, -1));
  }
  const ordered = [...needles].sort((a, b) => b.length - a.length);
  if (ordered.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const needle of ordered) if (out.includes(needle)) out = out.split(needle).join(REDACTED);
    return out;
  };
}
