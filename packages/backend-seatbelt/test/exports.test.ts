import { expect, it } from 'vitest';
import * as api from '../src/index.js';

it('pins the public exports of @mcpsandbox/backend-seatbelt', () => {
  expect(Object.keys(api).sort()).toEqual([
    'MACH_ALLOWLIST',
    'SEATBELT_FACTS',
    'SbplSyntaxError',
    'SeatbeltPathError',
    'TAG_PREFIX',
    'createBackend',
    'createSeatbeltBackend',
    'decide',
    'denialLine',
    'dylibClosure',
    'generateProfile',
    'grantFor',
    'logStreamArgs',
    'parseDenialLine',
    'parseOtoolL',
    'parseProfile',
    'probeSeatbelt',
    'profilePath',
    'sbplString',
  ]);
});

it('probeSeatbelt refuses off macOS with a typed error', async () => {
  await expect(api.probeSeatbelt('linux')).rejects.toMatchObject({ code: 'E_SEATBELT_UNAVAILABLE' });
});

it('the isolation line names the engine, the kernel and what it enforces and leaves', () => {
  const line = api.createBackend({ platform: 'darwin' }).describe?.() ?? '';
  expect(line).toMatch(
    /^Seatbelt \(sandbox-exec\) with a profile generated per process, Darwin \S+: reads only/,
  );
  expect(line).toContain('network only to the egress proxy');
  expect(line).toContain('no pid namespace');
  expect(api.createBackend({ platform: 'linux' }).describe?.()).toBe('seatbelt: macOS only (this is linux)');
});
