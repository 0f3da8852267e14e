import { type BackendRegistry, echoTrial } from '@mcpsandbox/cli';
import { takeEarlyLocalStart, takeEarlyStart } from './early-start.js';

// Each backend's module is loaded only when it is chosen: `run --backend none` does not pay for the
// e2b SDK at start (tens of MB and hundreds of ms).

/** The backends that ship with the binary. This is the one place that names them. */
export const builtInBackends: BackendRegistry = {
  local: {
    isolation: 'os',
    summary:
      'OS sandbox on this machine: bubblewrap on Linux (default), our own Seatbelt profile on macOS; on Windows, run it inside WSL2',
    ignores: ['--template'],
    // One config works on every OS: `local` is whatever OS sandbox this machine has. The binary
    // may have started the sandbox already (early-start.ts): the backend takes it if it is this one.
    // On macOS it is the seatbelt engine (its own profile, see backend-seatbelt); srt stays an
    // explicit `--backend srt`.
    create: async (options) =>
      process.platform === 'linux'
        ? (await import('@mcpsandbox/backend-local')).createLocalBackend({
            ...options,
            takeEarlyStart: takeEarlyLocalStart,
          })
        : process.platform === 'darwin'
          ? (await import('@mcpsandbox/backend-seatbelt')).createSeatbeltBackend(options)
          : (await import('@mcpsandbox/backend-srt')).createSrtBackend(options),
  },
  srt: {
    isolation: 'os',
    summary: "Anthropic's sandbox-runtime: Seatbelt on macOS, bubblewrap on Linux (not on Windows: use WSL2)",
    ignores: ['--template'],
    create: async (options) => (await import('@mcpsandbox/backend-srt')).createSrtBackend(options),
    // A real session (the echo probe under srt); its line says what the engine enforces here.
    probe: async (options) => {
      const { createSrtBackend } = await import('@mcpsandbox/backend-srt');
      return echoTrial(createSrtBackend(options), [process.execPath, '-e', ECHO_PROGRAM]);
    },
  },
  e2b: {
    isolation: 'microvm',
    summary: 'E2B Firecracker micro-VM in the cloud (needs E2B_API_KEY)',
    // Each VM is new: nothing of a session is kept; no host TLS trust crosses into the cloud.
    ignores: ['--state', '--no-host-tls-trust', '--project-npmrc'],
    create: async (options) => (await import('@mcpsandbox/backend-e2b')).createE2BBackend(options),
  },
  vm: {
    isolation: 'language',
    summary: 'JavaScript MCP apps in a hardened node:vm worker, inside the local OS sandbox when usable',
    // The worker gets no files and no network of the host's: an app reaches out only through the host.
    ignores: ['--template', '--mount', '--allow-net', '--state', '--no-host-tls-trust', '--project-npmrc'],
    create: async (options) => {
      const [{ createVmBackend }, local] = await Promise.all([
        import('@mcpsandbox/vm-sandbox'),
        import('@mcpsandbox/backend-local'),
      ]);
      // The OS sandbox around the worker closes what the permission model leaves open (loopback,
      // signals). Use it whenever it works here; when it does not, the start-up line says so.
      try {
        await local.probeLocalSandbox({ ...(options.hostEnv ? { hostEnv: options.hostEnv } : {}) });
      } catch (error) {
        options.logger?.warn(`vm: no OS sandbox around the worker (${(error as Error).message})`);
        return createVmBackend(options);
      }
      return createVmBackend({ ...options, hostBackend: local.createLocalBackend(options) });
    },
    // Runs the conformance probe app in a real worker, wired as `run --backend vm` wires it.
    probe: async (options) => {
      const [{ vmProbe }, backend] = await Promise.all([
        import('@mcpsandbox/vm-sandbox'),
        builtInBackends.vm?.create(options),
      ]);
      if (!backend) throw new Error('the vm backend is not registered');
      return echoTrial(backend, vmProbe(['echo']));
    },
  },
  none: {
    isolation: 'none',
    summary: 'no sandbox: a plain child process (for trusted servers and measuring)',
    // The host's own files and network are all reachable anyway.
    ignores: ['--template', '--mount', '--allow-net', '--state', '--no-host-tls-trust', '--project-npmrc'],
    // Its own entry: a plain child process needs none of the OS sandbox's egress stack at start.
    // The binary may have started the server already (early-start.ts): its sandbox takes it.
    create: async (options) =>
      (await import('@mcpsandbox/backend-local/none')).createNoneBackend({ ...options, takeEarlyStart }),
  },
  fake: {
    isolation: 'none',
    summary: 'in-memory fake server, no processes (for tests and examples)',
    ignores: ['--template', '--mount', '--allow-net', '--state', '--no-host-tls-trust', '--project-npmrc'],
    create: async (options) => (await import('@mcpsandbox/backend-fake')).createFakeBackend(options),
  },
};

export const DEFAULT_BACKEND = 'local';

/** Echoes stdin to stdout: the doctor's trial program for srt. */
const ECHO_PROGRAM = 'process.stdin.pipe(process.stdout)';
