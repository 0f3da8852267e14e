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
      // `local` is srt off Linux: its engine here, or what is missing (on Windows, with the install command).
      local:
        process.platform === 'linux'
          ? backendProbeFrom(
              async () => (await import('@mcpsandbox/backend-local')).probeLocalSandbox(),
              (found) =>
                `bubblewrap ${found.bwrapVersion}${found.runAs ? `, runs as uid ${found.runAs.uid}` : ''}`,
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
