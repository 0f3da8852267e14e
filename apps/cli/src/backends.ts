import type { BackendRegistry } from '@mcpsandbox/cli';

// Each backend's module is loaded only when it is chosen: `run --backend none` does not pay for the
// e2b SDK at start (tens of MB and hundreds of ms).

/** The backends that ship with the binary. This is the one place that names them. */
export const builtInBackends: BackendRegistry = {
  local: {
    summary: 'OS sandbox on this machine: Linux namespaces via bubblewrap (default)',
    create: async (options) => (await import('@mcpsandbox/backend-local')).createLocalBackend(options),
  },
  e2b: {
    summary: 'E2B Firecracker micro-VM in the cloud (needs E2B_API_KEY)',
    create: async (options) => (await import('@mcpsandbox/backend-e2b')).createE2BBackend(options),
  },
  none: {
    summary: 'no sandbox: a plain child process (for trusted servers and measuring)',
    create: async (options) => (await import('@mcpsandbox/backend-local')).createNoneBackend(options),
  },
  fake: {
    summary: 'in-memory fake server, no processes (for tests and examples)',
    create: async (options) => (await import('@mcpsandbox/backend-fake')).createFakeBackend(options),
  },
};

export const DEFAULT_BACKEND = 'local';
