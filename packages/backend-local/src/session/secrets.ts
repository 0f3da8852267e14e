/**
 * `--secret` in a local sandbox: the session CA and its trust files (written by the egress
 * package's shared writer, loaded only when a secret is bound), bound read-only for the server.
 */
import { join } from 'node:path';
import type { BoundSecret } from '@mcpsandbox/core';
import type { SecretRouting } from '@mcpsandbox/egress';
import type { Bind } from '@mcpsandbox/host-side';

/** Where the trust files are seen inside. */
export const SANDBOX_TRUST_DIR = '/run/mcp-sandbox-trust';

export interface SecretSession {
  readonly routing: SecretRouting;
  readonly bind: Bind;
  readonly env: Readonly<Record<string, string>>;
}

export async function startSecretSession(
  secrets: readonly BoundSecret[],
  sessionRoot: string,
  hostEnv: Readonly<Record<string, string | undefined>>,
  forwardsHostTrust: boolean,
  upstreamCa?: string,
): Promise<SecretSession> {
  const { writeSecretTrust } = await import('@mcpsandbox/egress/secrets');
  const trust = await writeSecretTrust({
    secrets,
    dir: join(sessionRoot, 'trust'),
    hostEnv,
    forwardsHostTrust,
    ...(upstreamCa ? { upstreamCa } : {}),
  });
  return {
    routing: trust.routing,
    bind: { source: trust.dir, dest: SANDBOX_TRUST_DIR, mode: 'ro' },
    env: trust.envAt(SANDBOX_TRUST_DIR),
  };
}
