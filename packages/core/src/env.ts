import { UsageError } from './errors.js';
import { MIN_REDACTED_LENGTH } from './secrets.js';

export interface EnvAllowlist {
  /** What crosses into the sandbox, and nothing else. */
  readonly env: Record<string, string>;
  /** Values to redact from traces and forwarded stderr. */
  readonly secrets: readonly string[];
  /** Host variables that were not forwarded. */
  readonly withheld: readonly string[];
  /** Of those, the ones whose names look like credentials (names only, never values). */
  readonly withheldSecretLike: readonly string[];
  /**
   * Passed variables whose names look like credentials but whose values are too short to be
   * redacted (names only): the user is told, rather than trusting a redaction that is not done.
   */
  readonly unredacted: readonly string[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SECRET_LIKE =
  /(SECRET|TOKEN|PASSW(OR)?D|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH|SESSION|COOKIE|_KEY$|^AWS_|^GH_|^GITHUB_)/i;

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
  const unredacted = Object.keys(env)
    .filter((name) => looksSecret(name) && (env[name] as string).length > 0)
    .filter((name) => (env[name] as string).length < MIN_REDACTED_LENGTH)
    .sort();
  return { env, secrets, withheld, withheldSecretLike: withheld.filter(looksSecret), unredacted };
}
