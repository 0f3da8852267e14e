import { knownSecretHosts } from '@mcpsandbox/core';
import type { DoctorCheck, DoctorHost } from './types.js';

/** Variables in the user's environment whose API host is known, at most this many named. */
const MAX_NAMED = 3;

/**
 * When to use `--secret` and when `--env`, in one line; names the tokens of known APIs set in
 * this environment (names only, never a value) with the flag that keeps each out of the sandbox.
 */
export function secretsCheck(host: DoctorHost): DoctorCheck {
  return {
    id: 'secrets',
    run: async () => {
      const known = Object.keys(host.env)
        .filter((name) => host.env[name] && knownSecretHosts(name) !== undefined)
        .sort()
        .slice(0, MAX_NAMED)
        .map((name) => `--secret ${name}@${(knownSecretHosts(name) ?? []).join(',')}`);
      const here = known.length > 0 ? `; set here: ${known.join(', ')}` : '';
      return {
        status: 'info',
        title: 'secrets',
        summary:
          '--secret NAME@host (backend local) for a token a server sends over HTTPS to one API: the sandbox holds a stand-in; ' +
          `--env NAME for anything else (other protocols, pinned certificates, mTLS, other backends)${here}`,
      };
    },
  };
}
