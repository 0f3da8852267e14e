import { createE2BBackend } from '@mcpsandbox/backend-e2b';
import { createFakeBackend } from '@mcpsandbox/backend-fake';
import { createLocalBackend, createNoneBackend } from '@mcpsandbox/backend-local';
import type { BackendRegistry } from '@mcpsandbox/cli';

/** The backends that ship with the binary. This is the one place that names them. */
export const builtInBackends: BackendRegistry = {
  local: {
    summary: 'OS sandbox on this machine: Linux namespaces via bubblewrap (default)',
    create: createLocalBackend,
  },
  e2b: { summary: 'E2B Firecracker micro-VM in the cloud (needs E2B_API_KEY)', create: createE2BBackend },
  none: {
    summary: 'no sandbox: a plain child process (for trusted servers and measuring)',
    create: createNoneBackend,
  },
  fake: {
    summary: 'in-memory fake server, no processes (for tests and examples)',
    create: createFakeBackend,
  },
};

export const DEFAULT_BACKEND = 'local';
