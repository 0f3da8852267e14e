import { BackendUnavailableError } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import { defaultEngineDeps, type SrtEngineDeps, startSrtEngine } from '../src/engine.js';

// srt as root: on Linux the sandbox runs as nobody (the shared promise suite checks it); on
// macOS there is no user to drop to, so the start is refused with the reason before srt runs.
describe('srt started by root on macOS', () => {
  it('is refused, naming why, before srt checks or starts anything', async () => {
    const touched: string[] = [];
    const deps: SrtEngineDeps = {
      ...defaultEngineDeps('darwin'),
      uid: 0,
      manager: {
        checkDependencies: () => {
          touched.push('checkDependencies');
          return { errors: [], warnings: [] };
        },
        initialize: async () => {
          touched.push('initialize');
        },
        getLinuxHttpSocketPath: () => undefined,
        getLinuxSocksSocketPath: () => undefined,
      },
      openEgress: async () => {
        touched.push('openEgress');
        throw new Error('no egress in this test');
      },
    };
    const error = await startSrtEngine(deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as BackendUnavailableError).code).toBe('E_SRT_ROOT');
    expect((error as Error).message).toContain('does not run as root on macOS');
    expect(touched).toEqual([]);
  });
});
