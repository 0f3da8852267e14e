import { homedir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { runCli, type StateStore } from '@mcpsandbox/cli';
import { builtInBackends, DEFAULT_BACKEND } from './backends.js';
import { packageVersion } from './version.js';

/** Named state lives where the OS backends keep it; the module loads only for `state`. */
function localState(): StateStore {
  const open = async () => {
    const local = await import('@mcpsandbox/host-side');
    const root = local.defaultStateRoot(process.env, process.env.HOME ?? homedir(), process.getuid?.() === 0);
    return { local, root };
  };
  return {
    list: async () => {
      const { local, root } = await open();
      return { root, states: local.listStates(root) };
    },
    remove: async (name) => {
      const { local, root } = await open();
      return { root, removed: local.removeState(root, name) };
    },
  };
}

/** Runs the `mcp-sandbox` program on this process's stdio and resolves with its exit code. */
export function main(args: readonly string[]): Promise<number> {
  return runCli(args, {
    backends: builtInBackends,
    defaultBackend: DEFAULT_BACKEND,
    version: packageVersion(),
    // What a wrapped entry starts when this build is not the published package.
    self: { node: process.execPath, script: fileURLToPath(new URL('./bin.js', import.meta.url)) },
    io: {
      stdin: process.stdin,
      stdout: process.stdout,
      stderr: process.stderr,
      env: process.env,
      cwd: process.cwd(),
      signals: process,
      faults: process,
    },
    state: localState(),
    // The install cache's reader (host-side's install code) loads with ls and doctor only.
    installCache: async () => (await import('./install-cache.js')).localInstallCache(process.env),
    // The doctor's checks and probes load with doctor, not with every start.
    doctor: async () => (await import('./doctor-setup.js')).doctorSetup(),
  });
}
