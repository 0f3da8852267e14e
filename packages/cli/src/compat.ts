import type { CreateOptions, Logger, Sandbox, SandboxBackend, SandboxSpec } from '@mcpsandbox/core';

/** Sets the backend used when `--backend` is not given (in a client entry's `env`, for example). */
export const BACKEND_ENV = 'MCP_SANDBOX_BACKEND';
export const E2B_KEY_ENV = 'E2B_API_KEY';

type Env = Readonly<Record<string, string | undefined>>;

/** The backend when `--backend` is not given: `MCP_SANDBOX_BACKEND`, else the binary's default. */
export function defaultBackendName(env: Env, builtIn: string): string {
  return env[BACKEND_ENV]?.trim() || builtIn;
}

/**
 * mcp-sandbox 0.2 always ran the server in an E2B VM with open internet. A 0.2 user (an
 * `E2B_API_KEY` set, no `--backend`, no `MCP_SANDBOX_BACKEND`) is told once, at start, that the
 * server now runs elsewhere and how to keep E2B: never a silent move.
 */
export function noteDefaultChanged(backendGiven: boolean, env: Env, backend: string, logger: Logger): void {
  if (backendGiven || env[BACKEND_ENV]?.trim() || !env[E2B_KEY_ENV] || backend === 'e2b') return;
  logger.warn(
    `${E2B_KEY_ENV} is set, but the server runs in the ${backend} sandbox: since mcp-sandbox 1.0 \`${backend}\` is the default, ` +
      `not E2B. To keep E2B, pass --backend e2b (add --allow-net '*' for 0.2's open internet), or set ${BACKEND_ENV}=e2b ` +
      `(in the client entry's "env" block, for example)`,
  );
}

/**
 * Wraps the `local` backend so that, when it cannot run here (no bubblewrap, not Linux, no user
 * namespaces) and an E2B key is at hand, the user also hears that `--backend e2b` would work. The
 * backend may learn it at create, or at its first start (local tests the machine by starting).
 */
export function withE2bFallbackHint(backend: SandboxBackend, env: Env, logger: Logger): SandboxBackend {
  if (backend.id !== 'local' || !env[E2B_KEY_ENV]) return backend;
  let hinted = false;
  const hint = (error: unknown) => {
    // By name: a backend may bring its own copy of core.
    if (!hinted && (error as Error | undefined)?.name === 'BackendUnavailableError') {
      hinted = true;
      logger.warn(
        `the local sandbox cannot run here, but ${E2B_KEY_ENV} is set: --backend e2b would run this server in an E2B micro-VM instead`,
      );
    }
    throw error;
  };
  return {
    specificationVersion: backend.specificationVersion,
    id: backend.id,
    isolation: backend.isolation,
    ...(backend.substitutesSecrets ? { substitutesSecrets: true } : {}),
    ...(backend.describe ? { describe: () => backend.describe?.() ?? '' } : {}),
    async create(spec: SandboxSpec, options?: CreateOptions) {
      const sandbox = await backend.create(spec, options).catch(hint);
      const prepare = sandbox.prepare?.bind(sandbox);
      return {
        id: sandbox.id,
        exec: (command, execOptions) => sandbox.exec(command, execOptions).catch(hint),
        ...(prepare
          ? { prepare: (command, prepareOptions) => prepare(command, prepareOptions).catch(hint) }
          : {}),
        close: () => sandbox.close(),
      } satisfies Sandbox;
    },
  };
}
