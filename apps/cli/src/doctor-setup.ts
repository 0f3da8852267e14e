import {
  backendProbeFrom,
  createSystemDoctorHost,
  type DoctorSetup,
  envKeyBackendProbe,
} from '@mcpsandbox/cli';

/** What `mcp-sandbox doctor` checks on this machine; loaded only when doctor runs. */
export function doctorSetup(): DoctorSetup {
  const host = createSystemDoctorHost({ env: process.env, nodeVersion: process.versions.node });
  return {
    host,
    // The same probe `local` runs at start: doctor's verdict and the backend's cannot disagree.
    backendProbes: {
      // `local` is seatbelt on macOS and refused on Windows with the WSL2 line: its engine here, or what is missing.
      local:
        process.platform === 'linux'
          ? backendProbeFrom(
              async () => (await import('@mcpsandbox/backend-local')).probeLocalSandbox(),
              (found) =>
                `bubblewrap ${found.bwrapVersion}${found.runAs ? `, runs as uid ${found.runAs.uid}` : ''}`,
            )
          : process.platform === 'darwin'
            ? backendProbeFrom(
                async () => (await import('@mcpsandbox/backend-seatbelt')).probeSeatbelt(),
                (found) => `${found.engine} on ${found.version}; ${found.gaps}`,
              )
            : backendProbeFrom(
                async () => (await import('@mcpsandbox/backend-srt')).probeSrt(),
                (found) => `${found.engine}, sandbox-runtime ${found.version}`,
              ),
      e2b: envKeyBackendProbe(host, 'E2B_API_KEY', 'export E2B_API_KEY=<key from your E2B dashboard>'),
      none: async () => ({ usable: true, summary: 'always available (no isolation)' }),
      fake: async () => ({ usable: true, summary: 'always available (in memory, for tests)' }),
    },
  };
}
