import {
  type BoundSecret,
  bindSecret,
  makeStandIn,
  parseSecretFlag,
  type SandboxSpec,
  UsageError,
} from '@mcpsandbox/core';

/** Backends whose egress passes this host's proxy, which substitutes a bound secret on the wire. */
const SUBSTITUTING_BACKENDS = new Set(['local', 'srt', 'seatbelt']);

/** Whether `--secret` is honoured on this backend (else run refuses it, naming `--env`). */
export function substitutesSecrets(backendId: string): boolean {
  return SUBSTITUTING_BACKENDS.has(backendId);
}

/**
 * `--secret` flags, parsed and bound to the host environment's values. Refused on a backend that
 * cannot keep the value out of the sandbox, with the alternative; refused for a host no
 * `--allow-net` entry names exactly (the secret would never leave), and for a name also passed
 * with `--env` (the sandbox would hold the real value after all).
 */
export function planSecrets(
  flags: readonly string[],
  hostEnv: Readonly<Record<string, string | undefined>>,
  backend: { readonly name: string; readonly substitutes: boolean },
  allowNet: readonly string[],
  envNames: readonly string[],
): BoundSecret[] {
  if (flags.length === 0) return [];
  const bindings = flags.map(parseSecretFlag);
  if (!backend.substitutes) {
    const names = bindings.map((b) => b.name).join(', ');
    throw new UsageError(
      `--secret is not supported on backend ${backend.name} (its egress does not pass through this host's proxy, ` +
        `so the real value could not be put on the wire for it); use --backend local, or pass the real value with --env ${names}`,
    );
  }
  const seen = new Set<string>();
  const bound: BoundSecret[] = [];
  for (const binding of bindings) {
    if (seen.has(binding.name))
      throw new UsageError(`--secret ${binding.name} is given twice; list every host in one flag`);
    seen.add(binding.name);
    if (envNames.includes(binding.name)) {
      throw new UsageError(
        `--secret ${binding.name} and --env ${binding.name}: choose one (--env puts the real value in the sandbox)`,
      );
    }
    for (const host of binding.hosts) {
      if (!allowNet.some((grant) => grant === host || grant.startsWith(`${host}:`))) {
        throw new UsageError(
          `--secret ${binding.name}@${host}: ${host} is not granted; add --allow-net ${host}`,
        );
      }
    }
    bound.push(bindSecret(binding, hostEnv));
  }
  return bound;
}

/**
 * The spec of one session: every stand-in fresh (serve starts one sandbox per session, and a
 * stand-in one session saw must mean nothing in another).
 */
export function withFreshStandIns<S extends Omit<SandboxSpec, 'onEvent'>>(spec: S): S {
  const secrets = spec.network?.secrets;
  if (!secrets || secrets.length === 0) return spec;
  const fresh = secrets.map((secret) => ({ ...secret, standIn: makeStandIn(secret.value) }));
  const env = { ...spec.env };
  for (const secret of fresh) env[secret.name] = secret.standIn;
  return { ...spec, env, network: { ...spec.network, allow: spec.network?.allow ?? [], secrets: fresh } };
}
